import Foundation
import Proof
import Testing

/// A recording taken over by another serve instance (failover), on files made here (no Janus):
/// the next owner links its first checkpoint to the last one the dead owner published, and
/// `verify` checks one chain across both owners' folders.
@Suite struct FailoverChainTests {
    static func bytes(_ round: Int) -> [UInt8] { (0..<1000).map { UInt8(($0 * 7 + round) % 251) } }

    /// Owner A writes three checkpoints in `a` but published only the second (its renewal came
    /// before the third); owner B takes over in `b` and writes two.
    static func failover(a: URL, b: URL, key: SigningKey) async throws -> ChainLink {
        let head = ChainHead()
        let chainA = ProofChain(directory: a, key: key, identity: ChainTests.identity, instance: "a", head: head)
        var published: ChainLink?
        for round in 0..<3 {
            try ChainTests.append(bytes(round), to: a.appendingPathComponent("1-a.opus"))
            try await chainA.checkpoint(files: ["1-a.opus"], counters: .object([:]))
            if round == 1 { published = head.link }
        }
        let link = try #require(published)
        let chainB = ProofChain(directory: b, key: key, identity: ChainTests.identity, instance: "b", takeover: ChainTakeover(cause: "failover", from: "a", link: link))
        for round in 0..<2 {
            try ChainTests.append(bytes(round + 10), to: b.appendingPathComponent("1-a-2.opus"))
            // In a folder both share, the next owner names the earlier owner's files too (it resumes them).
            try await chainB.checkpoint(files: ["1-a-2.opus"] + (a == b ? ["1-a.opus"] : []), counters: .object([:]))
        }
        return link
    }

    @Test("two owners' folders: one chain, the failover named, the dead owner's unpublished checkpoint proves its own folder; a tamper there is found")
    func twoFolders() async throws {
        let parent = try ChainTests.folder()
        let a = parent.appendingPathComponent("a"), b = parent.appendingPathComponent("b")
        for d in [a, b] { try FileManager.default.createDirectory(at: d, withIntermediateDirectories: true) }
        let key = SigningKey.generate(.p256)
        let link = try await Self.failover(a: a, b: b, key: key)
        #expect(link.checkpoint == 2)

        let r = Verifier(directories: [a, b], expected: .fingerprint(key.publicKey.fingerprint)).run()
        #expect(r.verdict == .unfinished && r.problemCount == 0, "no final manifest: unfinished: \(r.text)")
        #expect(r.instances == ["a", "b"] && r.identity == ChainTests.identity, "\(r.text)")
        #expect(r.folders == ["a", "b"] && r.checkpoints == 4, "\(r.text)")
        #expect(r.failovers.count == 1, "\(r.text)")
        let failover = r.failovers.first ?? ""
        #expect(failover.contains("checkpoint 3 (b) took over (failover) from a after checkpoint 2 (a)"), "\(failover)")
        #expect(failover.contains("a goes on to checkpoint 3"), "the dead owner's tail is named: \(failover)")
        #expect(r.reach.contains { $0.file == "a/1-a.opus" && $0.proven == 3000 }, "A's folder proven to its own last checkpoint: \(r.text)")
        #expect(r.reach.contains { $0.file == "b/1-a-2.opus" && $0.proven == 2000 }, "\(r.text)")

        // Their parent folder stands for both.
        let viaParent = Verifier(directories: [parent]).run()
        #expect(viaParent.verdict == .unfinished && viaParent.problemCount == 0 && viaParent.folders == ["a", "b"] && viaParent.failovers.count == 1, "\(viaParent.text)")

        // B's folder alone: its chain starts at a takeover whose link is in no folder given.
        let alone = Verifier(directory: b).run()
        #expect(!alone.ok && alone.problems.contains { $0.text.contains("give the folder of every owner") }, "\(alone.text)")

        // One byte changed in what A's last checkpoint covers.
        let file = a.appendingPathComponent("1-a.opus")
        var data = try Data(contentsOf: file)
        data[1500] ^= 0x01
        try data.write(to: file)
        let tampered = Verifier(directories: [a, b]).run()
        #expect(!tampered.ok && tampered.problems.contains { $0.file == "a/1-a.opus" && $0.checkpoint == 3 }, "\(tampered.text)")
    }

    @Test("a failover the next owner finished: 0 when every byte is proven; the dead owner's tail unproven: 75; the end's manifest removed: 65; cut back before the end: 75")
    func finishedFailover() async throws {
        let parent = try ChainTests.folder()
        let a = parent.appendingPathComponent("a"), b = parent.appendingPathComponent("b")
        for d in [a, b] { try FileManager.default.createDirectory(at: d, withIntermediateDirectories: true) }
        let key = SigningKey.generate(.p256)
        _ = try await Self.failover(a: a, b: b, key: key)
        let chainB = ProofChain(directory: b, key: key, identity: ChainTests.identity, instance: "b")
        try await chainB.checkpoint(files: ["1-a-2.opus"], counters: .null, final: true)
        try RecordingFixture.seal(ChainTests.identity, files: ["1-a-2.opus"], chain: chainB, key: key, in: b)
        let r = Verifier(directories: [a, b]).run()
        #expect(r.verdict == .finished && r.checkpoints == 5 && r.instances == ["a", "b"], "\(r.text)")

        let deadFile = a.appendingPathComponent("1-a.opus")
        try ChainTests.append([1, 2, 3], to: deadFile)
        let tail = Verifier(directories: [a, b]).run()
        #expect(tail.verdict == .unfinished && tail.unproven == 3 && tail.text.contains("an earlier owner's folder goes on"), "\(tail.text)")
        let h = try FileHandle(forWritingTo: deadFile)
        try h.truncate(atOffset: 3000)
        try h.close()

        try FileManager.default.removeItem(at: b.appendingPathComponent("manifest.json"))
        let removed = Verifier(directories: [a, b]).run()
        #expect(removed.verdict == .failed && removed.problems.contains { $0.file == "b/manifest.json" && $0.text.contains("marks the end") }, "\(removed.text)")
        try RecordingFixture.keepLines(2, in: b)
        let cut = Verifier(directories: [a, b]).run()
        #expect(cut.verdict == .unfinished && cut.checkpoints == 4, "\(cut.text)")
    }

    @Test("a checkpoint removed from the dead owner's folder: the next no longer links, named")
    func removedInFirstFolder() async throws {
        let parent = try ChainTests.folder()
        let a = parent.appendingPathComponent("a"), b = parent.appendingPathComponent("b")
        for d in [a, b] { try FileManager.default.createDirectory(at: d, withIntermediateDirectories: true) }
        let key = SigningKey.generate(.ed25519)
        _ = try await Self.failover(a: a, b: b, key: key)
        let journal = a.appendingPathComponent(ProofChain.fileName)
        var lines = try String(contentsOf: journal, encoding: .utf8).split(separator: "\n")
        lines.remove(at: 0)
        try (lines.joined(separator: "\n") + "\n").write(to: journal, atomically: true, encoding: .utf8)
        let r = Verifier(directories: [a, b]).run()
        #expect(!r.ok, "\(r.text)")
        #expect(r.problems.contains { $0.file == "a/proof.jsonl" }, "\(r.text)")
    }

    @Test("a folder both owners share: the next owner continues from the file's last checkpoint (past the one published), one line names the failover")
    func sharedFolder() async throws {
        let dir = try ChainTests.folder()
        let key = SigningKey.generate(.p256)
        _ = try await Self.failover(a: dir, b: dir, key: key)
        let r = Verifier(directory: dir).run()
        #expect(r.verdict == .unfinished && r.problemCount == 0, "\(r.text)")
        #expect(r.checkpoints == 5 && r.failovers.count == 1, "\(r.text)")
        #expect(r.failovers.first?.contains("checkpoint 4 took over (failover) from a after checkpoint 3") == true, "\(r.failovers)")
    }
}
