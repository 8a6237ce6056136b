import Bot
import FrameCrypto
import Foundation
import Testing
import TestSupport

/// Signed recordings (`record --signing-key`, `sfubot verify`) against the local Janus: a real
/// recording verifies, also with Python's `cryptography` (scripts/verify-proof.py); each tamper
/// is detected and named; a SIGKILLed recorder's files are proven up to the last checkpoint.
extension MediaScene {
@Suite struct RecordingProofTests {
    let key = String(repeating: "5a", count: 32)
    /// scripts/verify-proof.py of this checkout.
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("scripts/verify-proof.py").path

    static func verify(_ dir: URL, _ extra: [String] = []) async throws -> CLITests.Run {
        try await CLITests.run(["verify", dir.path] + extra)
    }

    /// A copy of `dir` to tamper with.
    static func copy(_ dir: URL, _ name: String) throws -> URL {
        let to = dir.deletingLastPathComponent().appendingPathComponent(name)
        try FileManager.default.copyItem(at: dir, to: to)
        return to
    }

    static func publish(_ room: Int64, key: String, display: String) throws -> ChildProcess {
        try CLITests.start(["play", "--test-pattern", "--janus", Scene.janusURL!, "--room", "\(room)", "--key-hex", key,
                            "--display", display, "--duration", "40"])
    }

    @Test("a signed recording verifies (Swift and Python); every tamper is named; a killed one is proven to its last checkpoint")
    func signedRecording() async throws {
        let dir = try Scene.tempDirectory("proof")
        let keyFile = dir.appendingPathComponent("signing.key")
        let made = try await CLITests.run(["keys", "signing-key", "--out", keyFile.path])
        #expect(made.status == 0, "\(made.err)")
        let fingerprint = try #require(made.out.split(separator: "\n").first { $0.hasPrefix("fingerprint: ") }?.dropFirst(13)).description
        let (room, killedRoom) = (try await Scene.createRoom(), try await Scene.createRoom())
        let out = dir.appendingPathComponent("rec"), killedOut = dir.appendingPathComponent("killed")
        let recorder = try CLITests.start(["record", "--janus", Scene.janusURL!, "--room", "\(room)", "--key-hex", key, "--out", out.path, "--signing-key", keyFile.path,
                                           "--mix", dir.appendingPathComponent("call.opus").path])
        let killed = try CLITests.start(["record", "--janus", Scene.janusURL!, "--room", "\(killedRoom)", "--key-hex", key, "--out", killedOut.path, "--signing-key", keyFile.path])
        try await Task.sleep(for: .seconds(1))
        let players = [try Self.publish(room, key: key, display: "6:Ann"), try Self.publish(killedRoom, key: key, display: "7:Ben")]
        defer { for p in players { p.signal(SIGKILL) } }
        try await Task.sleep(for: .milliseconds(17_500))
        killed.signal(SIGKILL)
        recorder.signal(SIGINT)
        _ = await killed.exit()
        let finished = await recorder.finished()
        #expect(finished.status == 0, "\(finished.errText.suffix(2000))")

        // The finished recording: verify, with and without the expected fingerprint, and in Python.
        let ok = try await Self.verify(out, ["--fingerprint", fingerprint])
        #expect(ok.status == 0, "\(ok.out)\n\(ok.err)")
        #expect(ok.out.contains("fingerprint \(fingerprint)") && ok.out.contains("6:Ann") && ok.out.contains("room \(room)"), "\(ok.out)")
        let json = try await Self.verify(out, ["--json"])
        #expect(json.status == 0 && json.out.contains(#""ok":true"#) && json.out.contains(#""covered_by":"manifest""#) && json.out.contains(#""verdict":"finished""#), "\(json.out)")
        let py = try await ChildProcess.run("/usr/bin/python3", [Self.script, out.path])
        #expect(py.status == 0 && py.outText.contains("manifest signed by \(fingerprint)"), "\(py.outText)\(py.errText)")
        let manifest = try RecordingManifest.read(from: out)
        let media = try #require(manifest.feeds.first?.file)
        let checkpoints = try #require(manifest.proof?.chain?.checkpoints)
        // The mix is outside the folder: named by its path.
        #expect(checkpoints >= 3 && manifest.proof?.files.map(\.name) == [dir.appendingPathComponent("call.opus").path, media], "\(String(describing: manifest.proof))")

        // Each tamper, on a copy: exit 65 and the problem named.
        func tampered(_ name: String, _ change: (URL) throws -> Void, expect: String) async throws {
            let copy = try Self.copy(out, name)
            try change(copy)
            let r = try await Self.verify(copy)
            #expect(r.status == 65 && r.out.contains(expect), "\(name): exit \(r.status)\n\(r.out)")
        }
        try await tampered("flipped", { d in
            let f = d.appendingPathComponent(media)
            var data = try Data(contentsOf: f)
            data[data.count / 2] ^= 0x01
            try data.write(to: f)
        }, expect: "problem: \(media): the contents differ")
        try await tampered("edited", { d in
            let f = d.appendingPathComponent("manifest.json")
            try String(contentsOf: f, encoding: .utf8).replacingOccurrences(of: "\"display\" : \"6:Ann\"", with: "\"display\" : \"6:Eve\"")
                .write(to: f, atomically: true, encoding: .utf8)
        }, expect: "problem: manifest.json: the signature does not match")
        try await tampered("deleted", { try FileManager.default.removeItem(at: $0.appendingPathComponent(media)) }, expect: "problem: \(media): missing")
        try await tampered("appended", { d in
            let h = try FileHandle(forWritingTo: d.appendingPathComponent(media))
            try h.seekToEnd()
            try h.write(contentsOf: Data(repeating: 0, count: 10))
            try h.close()
        }, expect: "byte(s) appended")
        try await tampered("middle", { d in
            let f = d.appendingPathComponent("proof.jsonl")
            var lines = try String(contentsOf: f, encoding: .utf8).split(separator: "\n")
            lines.remove(at: 1)
            try (lines.joined(separator: "\n") + "\n").write(to: f, atomically: true, encoding: .utf8)
        }, expect: "problem: proof.jsonl, checkpoint 2:")
        let killedFiles = try FileManager.default.contentsOfDirectory(atPath: killedOut.path).filter { $0.hasSuffix(".mkv") || $0.hasSuffix(".mka") }
        try await tampered("replaced", { d in
            let f = d.appendingPathComponent(media)
            try FileManager.default.removeItem(at: f)
            try FileManager.default.copyItem(at: killedOut.appendingPathComponent(try #require(killedFiles.first { $0.hasSuffix(".video.mkv") })), to: f)
        }, expect: "problem: \(media)")
        try await tampered("downgraded", { try FileManager.default.removeItem(at: $0.appendingPathComponent("manifest.json")) },
                           expect: "marks the end of the recording")
        try await tampered("extra", { try Data("RIFF".utf8).write(to: $0.appendingPathComponent(".x.wav")) }, expect: "problem: .x.wav: a file nothing signed")
        let other = try await CLITests.run(["keys", "signing-key", "--out", dir.appendingPathComponent("other.key").path, "--type", "ed25519"])
        let otherPrint = try #require(other.out.split(separator: "\n").first { $0.hasPrefix("fingerprint: ") }?.dropFirst(13)).description
        let wrongKey = try await Self.verify(out, ["--fingerprint", otherPrint])
        #expect(wrongKey.status == 65 && wrongKey.out.contains("not the expected \(otherPrint)"), "\(wrongKey.out)")

        // The killed recorder: no signed manifest, its track files proven to the last checkpoint.
        let k = try await Self.verify(killedOut, ["--fingerprint", fingerprint])
        print("killed recording:\n\(k.out)")
        #expect(k.status == 75 && k.out.hasPrefix("UNFINISHED") && k.out.contains("covered by: the checkpoints only"), "a killed recording is unfinished, never 0: \(k.out)\n\(k.err)")
        #expect(k.out.contains("recording (signed): id ") && k.out.contains("room \(killedRoom)"), "the identity from the checkpoints: \(k.out)")
        #expect(k.out.components(separatedBy: "proven: ").count - 1 == killedFiles.count, "\(killedFiles)\n\(k.out)")
        let kpy = try await ChildProcess.run("/usr/bin/python3", [Self.script, killedOut.path])
        #expect(kpy.status == 0, "\(kpy.outText)")
    }

    @Test("mjr decrypt --signing-key: the outputs and the .mjr inputs signed by hash; verify checks both")
    func signedMjrDecrypt() async throws {
        let dir = try Scene.tempDirectory("proof-mjr")
        let keyFile = dir.appendingPathComponent("signing.key")
        #expect(try await CLITests.run(["keys", "signing-key", "--out", keyFile.path, "--type", "ed25519"]).status == 0)
        let tone = try await Audio.tone(440, seconds: 3, in: dir)
        let files = try await MjrDecryptTests().janusRecording(.file(tone.path), seconds: 3, ring: KeyRing(current: try CallKey(hex: key)), name: "proof")
        let out = dir.appendingPathComponent("dec")
        let run = try await CLITests.run(["mjr", "decrypt"] + files.map(\.path) + ["--key-hex", key, "--out", out.path, "--signing-key", keyFile.path])
        #expect(run.status == 0, "\(run.err)")
        let ok = try await Self.verify(out)
        #expect(ok.status == 0 && ok.out.components(separatedBy: "as decrypted").count - 1 == files.count, "\(ok.out)")
        let py = try await ChildProcess.run("/usr/bin/python3", [Self.script, out.path])
        #expect(py.status == 0, "\(py.outText)")
        // An input changed after it was decrypted is named.
        let h = try FileHandle(forWritingTo: files[0])
        try h.seekToEnd()
        try h.write(contentsOf: Data([0]))
        try h.close()
        let changed = try await Self.verify(out)
        #expect(changed.status == 65 && changed.out.contains("problem: \(files[0].standardizedFileURL.path): this input is not the one decrypted"), "\(changed.out)")
    }

    @Test("refusals: a signing key others can read (exit 65, before joining), a folder with nothing signed (65), no folder (66), a bad fingerprint")
    func refusals() async throws {
        let dir = try Scene.tempDirectory("proof-refusals")
        let keyFile = dir.appendingPathComponent("open.key")
        #expect(try await CLITests.run(["keys", "signing-key", "--out", keyFile.path]).status == 0)
        chmod(keyFile.path, 0o644)
        let record = try await CLITests.run(["record", "--janus", "ws://127.0.0.1:1", "--room", "1", "--key-hex", key, "--out", dir.appendingPathComponent("rec").path,
                                             "--signing-key", keyFile.path, "--duration", "1"])
        #expect(record.status == 65 && record.err.contains("open to other users"), "\(record.err)")
        let again = try await CLITests.run(["keys", "signing-key", "--out", keyFile.path])
        #expect(again.status == 73, "never over an existing key: \(again.err)")
        let empty = dir.appendingPathComponent("empty")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        let nothing = try await Self.verify(empty)
        #expect(nothing.status == 65 && nothing.out.contains("nothing in"), "\(nothing.out)")
        #expect(try await Self.verify(dir.appendingPathComponent("none")).status == 66)
        let bad = try await Self.verify(empty, ["--fingerprint", "abc"])
        #expect(bad.status != 0 && bad.err.contains("64 hex digits"), "\(bad.err)")
    }

    @Test("a publisher leaves (its track files merged and deleted), then the recorder is SIGKILLed: verify proves what is left")
    func killedAfterAMerge() async throws {
        let dir = try Scene.tempDirectory("proof-merge-kill")
        let keyFile = dir.appendingPathComponent("signing.key")
        #expect(try await CLITests.run(["keys", "signing-key", "--out", keyFile.path]).status == 0)
        let room = try await Scene.createRoom()
        let out = dir.appendingPathComponent("rec")
        let recorder = try CLITests.start(["record", "--janus", Scene.janusURL!, "--room", "\(room)", "--key-hex", key, "--out", out.path, "--signing-key", keyFile.path])
        try await Task.sleep(for: .seconds(1))
        let leaving = try CLITests.start(["play", "--test-pattern", "--janus", Scene.janusURL!, "--room", "\(room)", "--key-hex", key, "--display", "8:Lea", "--duration", "6"])
        let staying = try Self.publish(room, key: key, display: "9:Sam")
        defer { leaving.signal(SIGKILL); staying.signal(SIGKILL) }
        try await Task.sleep(for: .milliseconds(12_700))
        recorder.signal(SIGKILL)
        _ = await recorder.exit()
        let names = try FileManager.default.contentsOfDirectory(atPath: out.path)
        #expect(names.contains { $0.hasSuffix("-8.mkv") }, "Lea's tracks were merged: \(names)")
        let r = try await Self.verify(out)
        print("killed after a merge:\n\(r.out)")
        #expect(r.status == 75 && r.out.contains("-8.mkv bytes") && r.out.contains("-9.video.mkv bytes"), "\(r.out)")
    }
}
}
