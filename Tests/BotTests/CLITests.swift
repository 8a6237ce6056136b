import Foundation
import Testing
import TestSupport

/// The `sfubot` executable as a user runs it, against the local Janus.
extension MediaScene {
@Suite struct CLITests {
    static var binary: URL { SfubotProcess.binary }
    typealias Run = SfubotProcess.Run
    static func start(_ args: [String]) throws -> ChildProcess { try SfubotProcess.start(args) }
    static func run(_ args: [String]) async throws -> Run { try await SfubotProcess.run(args) }

    let key = String(repeating: "ab", count: 32)

    @Test("sfubot load held until Ctrl-C: SIGINT stops it, the report is written and says so, exit 1")
    func loadStopsOnSignalAndWritesReport() async throws {
        let room = try await Scene.createRoom()
        let dir = try Scene.tempDirectory("load-cli")
        let port = try SilentListener().port
        let p = try Self.start(["load", "--janus", Scene.janusURL!, "--room", "\(room)", "--publishers", "2", "--subscribers", "2",
                                          "--duration", "0", "--key-hex", key, "--report", dir.path, "--metrics-port", "\(port)"])
        // Until the bots are in and frames flow: a few seconds of decrypted audio (the summary's
        // check below wants over 200), however long joining takes on a loaded machine.
        var text = ""
        let flowing = await eventually(within: 90) {
            text = await MetricsCLITests.scrape(port) ?? ""
            return PrometheusText.value(#"sfubot_frames_opened_total{kind="audio",format="ecall"}"#, in: text) ?? 0 >= 300
        }
        #expect(flowing, "no frames decrypted: \(text)")
        #expect(p.isRunning)
        // Its metrics: load's own figures (fed once a second) and the frame counters every command has.
        text = await MetricsCLITests.scrape(port) ?? ""
        #expect(PrometheusText.value(#"sfubot_load_frames_decrypted_total{shard="0"}"#, in: text) ?? 0 > 0, "\(text)")
        #expect(PrometheusText.value(#"sfubot_frames_opened_total{kind="audio",format="ecall"}"#, in: text) ?? 0 > 0, "\(text)")
        #expect(PrometheusText.value(#"sfubot_frames_sealed_total{kind="audio",format="ecall"}"#, in: text) ?? 0 > 0, "\(text)")
        p.signal(SIGINT)
        let r = await p.finished()
        #expect(r.status == 1, "\(r.errText)")
        let summary = try JSONSerialization.jsonObject(with: Data(contentsOf: dir.appendingPathComponent("summary.json"))) as! [String: Any]
        #expect(summary["interrupted"] as? Bool == true)
        #expect((summary["problems"] as? [String] ?? []).contains { $0.contains("interrupted") })
        let subs = try #require(summary["subscribers"] as? [String: Any])
        #expect((subs["framesOpened"] as? Int ?? 0) > 200 && subs["decryptFailuresTotal"] as? Int == 0)
        #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent("report.html").path))
    }

    @Test func keysGenerateShowAndImport() async throws {
        let dir = try Scene.tempDirectory("keys")
        let made = try await Self.run(["keys", "generate", "--type", "p256", "--out", dir.appendingPathComponent("p").path])
        #expect(made.status == 0, "\(made.err)")
        let keyFile = dir.appendingPathComponent("p/identity.key")
        let mode = (try FileManager.default.attributesOfItem(atPath: keyFile.path)[.posixPermissions] as? NSNumber)?.intValue
        #expect(mode == 0o600)
        let pem = try String(contentsOf: keyFile, encoding: .utf8)
        let body = pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
        #expect(!made.out.contains(body) && !made.err.contains(body), "the private key is never printed")
        let wire = try String(contentsOf: dir.appendingPathComponent("p/identity.pub"), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(wire.count == 88 && made.out.contains("public key: \(wire)"))
        let shown = try await Self.run(["keys", "show", "--key", keyFile.path])
        #expect(shown.status == 0 && shown.out == made.out.split(separator: "\n").dropFirst().joined(separator: "\n") + "\n")
        let again = try await Self.run(["keys", "generate", "--out", dir.appendingPathComponent("p").path])
        #expect(again.status == 73 && again.err.contains("never overwritten"))
        #expect(try String(contentsOf: keyFile, encoding: .utf8) == pem, "the existing key is untouched")
        let imported = try await Self.run(["keys", "import", keyFile.path, "--out", dir.appendingPathComponent("q").path])
        #expect(imported.status == 0 && imported.out.contains("public key: \(wire)"))
        let bad = try await Self.run(["keys", "show", "--key", dir.appendingPathComponent("p/identity.pub").path])
        #expect(bad.status == 65 && bad.err.contains("not a P-256 or RSA"))
    }

    @Test func errorsAreOneLineWithDistinctExitCodes() async throws {
        let room = try await Scene.createRoom()
        let dir = try Scene.tempDirectory("cli")
        let tone = try await Audio.tone(440, seconds: 1, in: dir)
        let badKeyFile = dir.appendingPathComponent("bad.key")
        try Data("not a key".utf8).write(to: badKeyFile)

        let cases: [([String], Int32, String)] = [
            (["play", tone.path, "--janus", Scene.janusURL!, "--room", "\(room + 7)", "--key-hex", key], 68, "does not exist"),
            (["play", tone.path, "--janus", "ws://127.0.0.1:1", "--room", "\(room)", "--key-hex", key], 69, "Janus unreachable"),
            (["play", tone.path, "--janus", Scene.janusURL!, "--room", "\(room)", "--key-file", badKeyFile.path], 65, "key file"),
            (["play", dir.appendingPathComponent("missing.wav").path, "--janus", Scene.janusURL!, "--room", "\(room)", "--no-e2ee"], 66, "cannot read"),
            (["record", "--janus", Scene.janusURL!, "--room", "\(room)", "--out", dir.path], 64, "exactly one of"),
        ]
        for (args, code, text) in cases {
            let r = try await Self.run(args)
            #expect(r.status == code, "\(args[0]) → \(r.status): \(r.err)")
            #expect(r.err.contains(text), "\(r.err)")
            if code != 64 { #expect(r.err.split(separator: "\n").count == 1, "one line: \(r.err)") }
            #expect(!r.err.contains(key), "the key never appears in output")
        }
    }

    @Test func killedRecorderLeavesAPlayableFile() async throws {
        let room = try await Scene.createRoom()
        let dir = try Scene.tempDirectory("kill")
        let tone = try await Audio.tone(440, seconds: 60, in: dir)
        let out = dir.appendingPathComponent("rec")
        let port = try SilentListener().port
        let recorder = try Self.start(["record", "--janus", Scene.janusURL!, "--room", "\(room)", "--key-hex", key, "--out", out.path,
                                       "--metrics-port", "\(port)"])
        let player = try Self.start(["play", tone.path, "--janus", Scene.janusURL!, "--room", "\(room)", "--key-hex", key, "--display", "3:Killed"])
        // Killed once it has opened 5 s of 20 ms frames, however long joining took.
        let recorded = await eventually(within: 90) {
            let text = await MetricsCLITests.scrape(port) ?? ""
            return PrometheusText.value(#"sfubot_frames_opened_total{kind="audio",format="ecall"}"#, in: text) ?? 0 >= 250
        }
        #expect(recorded, "the recorder opened no 5 s of audio")
        recorder.signal(SIGKILL)
        _ = await recorder.exit()
        player.signal(SIGTERM)
        _ = await player.exit()

        let file = try #require(try FileManager.default.contentsOfDirectory(atPath: out.path).first { $0.hasSuffix(".opus") })
        let samples = try await Audio.decode(out.appendingPathComponent(file))
        let seconds = Double(samples.count) / 48000
        // 5 s were opened when it was killed; Ogg pages go out at least every 500 ms.
        #expect(seconds >= 3.5, "\(seconds) s survived the kill")
        let f = try #require(Audio.dominantFrequency(samples))
        #expect(abs(f - 440) <= 440 * 0.02)
        #expect(FileManager.default.fileExists(atPath: out.appendingPathComponent("manifest.json").path), "the periodic manifest survives too")
    }

    @Test func sigtermFinishesCleanlyWithCounters() async throws {
        let room = try await Scene.createRoom()
        let dir = try Scene.tempDirectory("term")
        let tone = try await Audio.tone(440, seconds: 4, in: dir)
        let out = dir.appendingPathComponent("rec")
        let recorder = try Self.start(["record", "--janus", Scene.janusURL!, "--room", "\(room)", "--key-hex", key, "--out", out.path])
        try await Task.sleep(for: .seconds(1))
        let played = try await Self.run(["play", tone.path, "--janus", Scene.janusURL!, "--room", "\(room)", "--key-hex", key])
        #expect(played.status == 0)
        let sent = played.out.split(separator: "frames sealed and sent: ").last.flatMap { Int($0.prefix { $0.isNumber }) }
        #expect((199...202).contains(sent ?? 0), "4 s of 20 ms frames: \(played.out)")
        recorder.signal(SIGTERM)
        let stopped = await recorder.finished()
        let text = stopped.outText
        #expect(stopped.status == 0)
        #expect(text.contains("frames received:") && text.contains("no_key_opens=0"), "\(text)")
        let manifest = try Data(contentsOf: out.appendingPathComponent("manifest.json"))
        #expect(String(decoding: manifest, as: UTF8.self).contains("\"ended\""))
    }
}
}
