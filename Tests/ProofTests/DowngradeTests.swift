import Foundation
import Proof
import Testing

/// Issue 40's attacks on a signed recording (files made here, no Janus): each one passed as
/// `OK` (exit 0) before; now a finished recording is the only exit 0, and each attack is
/// tampering (65) or, where the files cannot tell it from a killed recorder, unfinished (75).
@Suite struct DowngradeTests {
    @Test("a finished recording: exit 0, the recording's identity from signed data, the same verdict in --json")
    func finishedIsOK() async throws {
        let identity = RecordingFixture.identity()
        let (dir, key) = try await RecordingFixture.make(identity)
        let r = Verifier(directory: dir, expected: .fingerprint(key.publicKey.fingerprint)).run()
        #expect(r.verdict == .finished && r.verdict.exitCode == 0 && r.problemCount == 0, "\(r.text)")
        #expect(r.text.hasPrefix("OK: finished") && r.text.contains("recording (signed): \(identity.summary)"), "\(r.text)")
        #expect(r.json["verdict"] == .string("finished") && r.json["exit"] == .number(0) && r.json["recording"] == identity.json)
        #expect(r.unsigned.isEmpty && r.extraFiles.isEmpty, "\(r.text)")
    }

    @Test("downgrade: the signed final manifest removed: the last checkpoint says the recording finished, so it is tampering (65)")
    func manifestRemoved() async throws {
        let (dir, _) = try await RecordingFixture.make()
        try FileManager.default.removeItem(at: dir.appendingPathComponent("manifest.json"))
        let r = Verifier(directory: dir).run()
        #expect(r.verdict == .failed && r.verdict.exitCode == 65, "\(r.text)")
        #expect(r.problems.contains { $0.text.contains("marks the end of the recording") && $0.file == "manifest.json" }, "\(r.text)")
        #expect(r.json["verdict"] == .string("failed") && r.json["exit"] == .number(65))
        let (status, out) = try await PythonCrossTests.python(dir)
        #expect(status == 1 && out.contains("the last checkpoint is final"), "scripts/verify-proof.py agrees: \(out)")
    }

    @Test("downgrade: the final manifest replaced by a directory, a JSON array, a symbolic link to /dev/urandom, an unsigned manifest: 65",
          arguments: ["directory", "array", "urandom", "unsigned"])
    func manifestReplaced(_ by: String) async throws {
        let (dir, _) = try await RecordingFixture.make()
        let url = dir.appendingPathComponent("manifest.json")
        let live = try JSONValue.parse(Data(contentsOf: url)).removing("proof")
        try FileManager.default.removeItem(at: url)
        switch by {
        case "directory": try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
        case "array": try Data("[1,2,3]".utf8).write(to: url)
        case "urandom": try FileManager.default.createSymbolicLink(atPath: url.path, withDestinationPath: "/dev/urandom")
        default: try RecordingFixture.write(live.removing("ended"), to: dir)
        }
        let r = Verifier(directory: dir).run()
        #expect(r.verdict == .failed && r.problems.contains { $0.file == "manifest.json" }, "\(by): \(r.text)")
        #expect(r.problems.contains { $0.text.contains("marks the end of the recording") }, "\(by): \(r.text)")
    }

    @Test("rollback: media and proof.jsonl cut back to checkpoint 2, the manifest removed: unfinished (75) up to checkpoint 2, never OK")
    func rollback() async throws {
        let (dir, _) = try await RecordingFixture.make(rounds: 5, matroska: false)
        let second = try RecordingFixture.checkpoint(2, in: dir)
        try RecordingFixture.keepLines(2, in: dir)
        try FileManager.default.removeItem(at: dir.appendingPathComponent("manifest.json"))
        for f in second["files"]?.array ?? [] {
            let h = try FileHandle(forWritingTo: dir.appendingPathComponent(try #require(f["name"]?.string)))
            try h.truncate(atOffset: UInt64(try #require(f["size"]?.int)))
            try h.close()
        }
        let r = Verifier(directory: dir).run()
        #expect(r.verdict == .unfinished && r.verdict.exitCode == 75 && r.checkpoints == 2, "\(r.text)")
        #expect(r.text.hasPrefix("UNFINISHED") && r.text.contains("proven up to checkpoint 2"), "\(r.text)")
        // With Matroska, whose head the muxer rewrites when it finishes, the cut does not even hold.
        let (mkv, _) = try await RecordingFixture.make(rounds: 5)
        try RecordingFixture.keepLines(2, in: mkv)
        try FileManager.default.removeItem(at: mkv.appendingPathComponent("manifest.json"))
        #expect(Verifier(directory: mkv).run().verdict != .finished)
    }

    @Test("splice: another recording's proof.jsonl and media in this folder (its live manifest kept) fail; the whole other folder verifies as the other recording, named")
    func splice() async throws {
        let mine = RecordingFixture.identity("rec-mine"), theirs = RecordingFixture.identity("rec-theirs", started: "2026-11-20T09:00:00.000Z")
        let (dir, key) = try await RecordingFixture.make(mine, finished: false)
        let (other, _) = try await RecordingFixture.make(theirs, key: key, finished: false)
        for name in [ProofChain.fileName, RecordingFixture.ogg, RecordingFixture.mkv] {
            try FileManager.default.removeItem(at: dir.appendingPathComponent(name))
            try FileManager.default.copyItem(at: other.appendingPathComponent(name), to: dir.appendingPathComponent(name))
        }
        let r = Verifier(directory: dir).run()
        #expect(r.verdict == .failed && r.problems.contains { $0.text.contains("names recording rec-mine, the checkpoints recording rec-theirs") }, "\(r.text)")
        // Without this folder's own manifest, the checkpoints name the other recording, signed.
        try FileManager.default.removeItem(at: dir.appendingPathComponent("manifest.json"))
        let bare = Verifier(directory: dir).run()
        #expect(bare.verdict == .unfinished && bare.identity == theirs && bare.text.contains("id rec-theirs") && !bare.text.contains("rec-mine"), "\(bare.text)")
        // Two recordings' folders given as one failover chain.
        let (a, _) = try await RecordingFixture.make(mine, key: key, finished: false)
        let both = Verifier(directories: [a, other]).run()
        #expect(both.verdict == .failed && both.problems.contains { $0.text.contains("two recordings'") }, "\(both.text)")
    }

    @Test("an edited unsigned start time in a killed recording's manifest is never shown: the start is the signed one")
    func unsignedStartNotShown() async throws {
        let identity = RecordingFixture.identity()
        let (dir, _) = try await RecordingFixture.make(identity, finished: false)
        let url = dir.appendingPathComponent("manifest.json")
        let text = try String(contentsOf: url, encoding: .utf8).replacingOccurrences(of: identity.started, with: "2020-01-01T00:00:00.000Z")
        try text.write(to: url, atomically: true, encoding: .utf8)
        let r = Verifier(directory: dir).run()
        #expect(r.verdict == .unfinished && r.started == identity.started, "\(r.text)")
        #expect(!r.text.contains("2020-01-01") && r.json["started"] == .string(identity.started), "\(r.text)")
    }

    @Test("a killed recording (SIGKILL: no final checkpoint, no signed manifest) with an unproven tail: unfinished (75), the tail counted")
    func killedIsUnfinished() async throws {
        let (dir, _) = try await RecordingFixture.make(finished: false)
        try ChainTests.append([UInt8](repeating: 1, count: 4000), to: dir.appendingPathComponent(RecordingFixture.ogg))
        let r = Verifier(directory: dir).run()
        #expect(r.verdict == .unfinished && r.verdict.exitCode == 75 && r.problemCount == 0, "\(r.text)")
        #expect(r.unproven == 4000 + 312 && r.json["unproven_bytes"] == .number(4312), "\(r.text)")
        #expect(r.unsigned.first?.hasPrefix("manifest.json (the recorder's live manifest") == true, "\(r.unsigned)")
    }

    @Test("files nothing signed fail, named (a .wav, a dotfile, media in a subfolder, a symbolic link); --allow-extra lists them",
          arguments: ["extra.wav", ".hidden", "sub/1-ann.mkv", "link.opus"])
    func extraFiles(_ name: String) async throws {
        let (dir, _) = try await RecordingFixture.make()
        let url = dir.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        if name.hasPrefix("link") {
            try FileManager.default.createSymbolicLink(atPath: url.path, withDestinationPath: dir.appendingPathComponent(RecordingFixture.ogg).path)
        } else {
            try Data("RIFF fake audio".utf8).write(to: url)
        }
        let r = Verifier(directory: dir).run()
        #expect(r.verdict == .failed && r.problems.map(\.file) == [name] && r.problems.first?.text.contains("nothing signed") == true, "\(r.text)")
        let allowed = Verifier(directory: dir, allowExtra: true).run()
        #expect(allowed.verdict == .finished && allowed.extraFiles == [name], "\(allowed.text)")
    }

    @Test("what serve and the recorder leave by design verifies: its folder id, the manifest reserve (zeros), a bucket's recording.json; anything else in them fails")
    func expectedFiles() async throws {
        let (dir, _) = try await RecordingFixture.make()
        try Data("0f9e3c1a-1111-4222-8333-944445555666\n".utf8).write(to: dir.appendingPathComponent(".sfubot-folder"))
        try Data(count: 4096).write(to: dir.appendingPathComponent(".manifest.reserve"))
        try Data("{}".utf8).write(to: dir.appendingPathComponent("recording.json"))
        let r = Verifier(directory: dir).run()
        #expect(r.verdict == .finished && r.unsigned.count == 3, "\(r.text)")
        try Data("hidden words".utf8).write(to: dir.appendingPathComponent(".manifest.reserve"))
        let hiding = Verifier(directory: dir).run()
        #expect(hiding.verdict == .failed && hiding.problems.map(\.file) == [".manifest.reserve"], "\(hiding.text)")
    }
}
