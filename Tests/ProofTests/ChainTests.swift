import Foundation
import Proof
import Testing

/// proof.jsonl on files made here (no Janus): what a killed recorder leaves is proven up to the
/// last checkpoint, and each tamper with the chain or the files is named.
@Suite struct ChainTests {
    static func folder() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("sfubot-proof-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// The recording the test chains name.
    static let identity = RecordingIdentity(id: "rec-test", room: 1234, janus: "ws://127.0.0.1:8188", started: "2026-11-25T22:00:00.000Z", job: nil)

    static func append(_ bytes: [UInt8], to url: URL) throws {
        if !FileManager.default.fileExists(atPath: url.path) { _ = FileManager.default.createFile(atPath: url.path, contents: nil) }
        let h = try FileHandle(forWritingTo: url)
        try h.seekToEnd()
        try h.write(contentsOf: Data(bytes))
        try h.close()
    }

    /// Three checkpoints of a growing Ogg-like file and a Matroska-like one whose last cluster is open.
    static func chain(_ kind: SigningKey.Kind = .p256) async throws -> (URL, SigningKey) {
        let (dir, key, _) = try await chainWriter(kind)
        return (dir, key)
    }

    /// The same, and the writer (which keeps its trackers).
    static func chainWriter(_ kind: SigningKey.Kind = .p256) async throws -> (URL, SigningKey, ProofChain) {
        let dir = try folder(), key = SigningKey.generate(kind)
        let chain = ProofChain(directory: dir, key: key, identity: identity)
        let ogg = dir.appendingPathComponent("1-a.opus"), mkv = dir.appendingPathComponent("2-b.mkv")
        let open: [UInt8] = [0x1F, 0x43, 0xB6, 0x75, 0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]
        try append([0x1A, 0x45, 0xDF, 0xA3], to: mkv)  // EBML: only Matroska files are searched for open clusters
        for round in 0..<3 {
            try append((0..<1000).map { UInt8(($0 + round) % 251) }, to: ogg)
            try append([UInt8](repeating: UInt8(round), count: 500) + open + [UInt8](repeating: 9, count: 300), to: mkv)
            try await chain.checkpoint(files: ["1-a.opus", "2-b.mkv"], counters: .object(["round": .number(Double(round))]))
        }
        return (dir, key, chain)
    }

    @Test("a chain left as a killed recorder leaves it verifies, up to the open Matroska cluster", arguments: SigningKey.Kind.allCases)
    func killedChainVerifies(_ kind: SigningKey.Kind) async throws {
        let (dir, key) = try await Self.chain(kind)
        let r = Verifier(directory: dir, expected: .fingerprint(key.publicKey.fingerprint)).run()
        #expect(r.verdict == .unfinished && r.problemCount == 0 && r.verdict.exitCode == 75, "a killed recording is unfinished, never OK: \(r.text)")
        #expect(r.coveredBy == "checkpoints" && r.checkpoints == 3 && r.identity == Self.identity)
        #expect(r.unproven == 312 && r.text.contains("312 of 5440 bytes unproven"), "the open cluster is the unproven tail: \(r.text)")
        #expect(r.reach.map(\.file) == ["1-a.opus", "2-b.mkv"])
        #expect(r.reach.map(\.proven) == [3000, 4 + 2 * 812 + 500], "the open cluster of the last round is not covered: \(r.reach)")
    }

    @Test("a Matroska file the muxer finished (its head rewritten, cues appended) is hashed again: the chain still proves it")
    func finishedMatroskaRehashed() async throws {
        let (dir, _, chain) = try await Self.chainWriter()
        let mkv = dir.appendingPathComponent("2-b.mkv")
        var data = try Data(contentsOf: mkv)
        data[8] = 0x42  // the segment's size, as matroskamux writes it at the end
        for i in [504, 1316, 2128] { data[i + 4] = 0x01; data[i + 5] = 0 }  // every cluster closed
        data.append(contentsOf: [UInt8](repeating: 0xC5, count: 100))  // the cues
        try data.write(to: mkv)
        try await chain.checkpoint(files: ["1-a.opus", "2-b.mkv"], counters: .null)
        let r = Verifier(directory: dir).run()
        #expect(r.verdict == .unfinished && r.problemCount == 0 && r.reach.last?.proven == data.count, "\(r.text)")
    }

    @Test("a checkpoint removed from the middle is named")
    func middleRemoved() async throws {
        let (dir, _) = try await Self.chain()
        let url = dir.appendingPathComponent(ProofChain.fileName)
        var lines = try String(contentsOf: url, encoding: .utf8).split(separator: "\n")
        lines.remove(at: 1)
        try (lines.joined(separator: "\n") + "\n").write(to: url, atomically: true, encoding: .utf8)
        let r = Verifier(directory: dir).run()
        #expect(!r.ok)
        #expect(r.problems.contains { $0.checkpoint == 2 && $0.text.contains("previous hash") }, "\(r.text)")
    }

    @Test("a byte changed in what a checkpoint covers is named, with the file and the checkpoint")
    func byteChanged() async throws {
        let (dir, _) = try await Self.chain()
        let url = dir.appendingPathComponent("1-a.opus")
        var data = try Data(contentsOf: url)
        data[1234] ^= 1
        try data.write(to: url)
        let r = Verifier(directory: dir).run()
        #expect(r.problems.map(\.file) == ["1-a.opus"] && r.problems.first?.checkpoint == 3, "\(r.text)")
    }

    @Test("another key than the expected one is named; a checkpoint edited fails its signature")
    func otherKeyAndEdit() async throws {
        let (dir, _) = try await Self.chain()
        let other = SigningKey.generate(.p256)
        let r = Verifier(directory: dir, expected: .key(other.publicKey)).run()
        #expect(r.problems.contains { $0.text.contains("not the expected \(other.publicKey.fingerprint)") }, "\(r.text)")
        let url = dir.appendingPathComponent(ProofChain.fileName)
        let text = try String(contentsOf: url, encoding: .utf8)
        try text.replacingOccurrences(of: #"{"round":2}"#, with: #"{"round":7}"#).write(to: url, atomically: true, encoding: .utf8)
        let edited = Verifier(directory: dir).run()
        #expect(edited.problems.contains { $0.checkpoint == 3 && $0.text.contains("signature") }, "\(edited.text)")
    }

    @Test("signing keys: PEM round trip, 0600, a readable file refused, fingerprints of the SPKI DER", arguments: SigningKey.Kind.allCases)
    func keyFiles(_ kind: SigningKey.Kind) throws {
        let dir = try Self.folder()
        let path = dir.appendingPathComponent("k.pem").path
        let key = try SigningKey.loadOrCreate(path, kind: kind)
        let again = try SigningKey(contentsOfFile: path)
        #expect(again.publicKey == key.publicKey && again.kind == kind)
        #expect(((try FileManager.default.attributesOfItem(atPath: path))[.posixPermissions] as? Int) == 0o600)
        #expect(try VerifyingKey(der: key.publicKey.der) == key.publicKey)
        #expect(key.publicKey.fingerprint == Hex.sha256(key.publicKey.der))
        let data = Data("signed".utf8)
        #expect(key.publicKey.isValid(try key.sign(data), for: data))
        #expect(!key.publicKey.isValid(try key.sign(data), for: Data("other".utf8)))
        chmod(path, 0o644)
        #expect(throws: SigningKeyError.self) { try SigningKey(contentsOfFile: path) }
    }
}

/// A recorder restarted on the same folder (serve after a crash) continues the chain.
@Suite struct ChainResumeTests {
    @Test("a second process numbers on from the last checkpoint and names it; verify sees one chain")
    func resumedChainContinues() async throws {
        let (dir, key) = try await ChainTests.chain()
        let again = ProofChain(directory: dir, key: key, identity: RecordingIdentity(id: "other", room: 1, janus: "ws://x", started: Date()))
        #expect(again.identity == ChainTests.identity, "a chain continued names the recording its lines name")
        #expect(again.end.count == 3)
        try ChainTests.append([1, 2, 3], to: dir.appendingPathComponent("3-c.opus"))
        #expect(try await again.checkpoint(files: ["3-c.opus"], counters: .null) == 4)
        let r = Verifier(directory: dir).run()
        #expect(r.verdict == .failed && r.checkpoints == 4 && r.reach.map(\.file) == ["3-c.opus"], "\(r.text)")
        #expect(Set(r.problems.compactMap(\.file)) == ["1-a.opus", "2-b.mkv"], "files the last checkpoint does not name fail: \(r.text)")
        #expect(Verifier(directory: dir, allowExtra: true).run().extraFiles == ["1-a.opus", "2-b.mkv"], "or are listed with --allow-extra")
        // As the recorder resumes: every earlier file named again.
        try await again.checkpoint(files: ["1-a.opus", "2-b.mkv", "3-c.opus"], counters: .null)
        let whole = Verifier(directory: dir).run()
        #expect(whole.verdict == .unfinished && whole.problemCount == 0 && whole.checkpoints == 5, "\(whole.text)")
    }
}
