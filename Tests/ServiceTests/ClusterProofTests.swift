import Foundation
import Testing
import TestSupport

/// Issue 29's failover: a recording another instance took over verifies as one chain across
/// the folders of both owners.
extension MediaScene.ClusterTests {
    /// Runs serve in a mount namespace of its own where `folder` is `disk`: a second machine
    /// with its own disk at the same path (the job's `out` is one absolute path for all).
    static func ownDisk(_ disk: URL, at folder: URL) -> [String] {
        ["/usr/bin/unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c",
         #"mount --bind "$1" "$2" && shift 2 && exec "$@""#, "sh", disk.path, folder.path]
    }

    @Test("the owner SIGKILLed, the other takes over on its own disk: verify of both folders is one chain naming the failover; a tamper in the first is found")
    func failoverVerifiesAsOneChain() async throws {
        let room = try await Scene.createRoom()
        let dir = try Scene.tempDirectory("cluster-proof")
        let pg = try await LocalPostgres.start(port: 15439)
        var pair = Pair(pg: pg, dir: dir, a: try await Self.serve("a", port: 18539, dir: dir, database: pg.url()))
        let player = try await player(room: room, dir: dir)
        defer { player.signal(SIGKILL) }
        do {
            let a = pair.a
            let out = dir.appendingPathComponent("rec"), diskB = dir.appendingPathComponent("rec-b")
            for d in [out, diskB] { try FileManager.default.createDirectory(at: d, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700]) }
            let rec = try await a.request("POST", "/v1/recordings", json: ["room": room, "key": ["hex": key], "out": out.path])
            let id = try #require(try rec.json()["id"] as? String)
            _ = try await a.waitFor("/v1/recordings/\(id)") { $0["owner"] as? String == "a" && Self.live($0, frames: 100) }
            // A has published at least its second checkpoint with a renewal.
            let deadline = ContinuousClock.now + .seconds(40)
            func published() async throws -> Int { Int(try await pg.psql("SELECT coalesce(chain_head->>'checkpoint', '0') FROM jobs WHERE id = '\(id)'")) ?? 0 }
            while try await published() < 2, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(300)) }
            #expect(try await published() >= 2, "the owner publishes its chain head with its renewals")
            let b = try await ServeProcess.start(port: 18540, in: dir, stateDir: dir.appendingPathComponent("state-b"), token: a.token,
                                                 extra: ["--database", pg.url(), "--instance-id", "b", "--signing-key", dir.appendingPathComponent("state-a/signing.key").path],
                                                 launcher: Self.ownDisk(diskB, at: out))
            pair.b = b
            a.process.signal(SIGKILL)
            _ = await a.process.exit(within: .seconds(10))
            let taken = try await b.waitFor("/v1/recordings/\(id)", within: .seconds(40)) { $0["owner"] as? String == "b" && Self.live($0, frames: 100) }
            #expect(Self.owners(taken).last?["cause"] as? String == "failover", "\(taken)")
            // Past B's first checkpoint (5 s) before it finishes.
            try await Task.sleep(for: .seconds(6))
            let final = try await b.request("DELETE", "/v1/recordings/\(id)").json()
            #expect(final["state"] as? String == "done", "\(final)")
            let inB = try FileManager.default.contentsOfDirectory(atPath: diskB.path)
            #expect(inB.contains("manifest.json") && inB.contains("proof.jsonl"), "B recorded on its own disk: \(inB)")

            let both = try await SfubotProcess.run(["verify", out.path, diskB.path])
            print("cluster: verify of both owners' folders:\n\(both.out)")
            // Finished, but the dead owner's folder goes on past its last checkpoint (a Matroska
            // cluster still open, the last seconds): those bytes are unproven, so not 0.
            #expect(both.status == 75 && both.out.contains("finished, but an earlier owner's folder goes on"), "\(both.out)\n\(both.err)")
            #expect(both.out.contains("folders: rec, rec-b, one chain") && both.out.contains("covered by: the signed final manifest"), "\(both.out)")
            #expect(both.out.contains("failover: ") && both.out.contains("took over (failover) from a after checkpoint"), "\(both.out)")
            #expect(both.out.contains("proven: rec/"), "A's folder proven up to its own last checkpoint: \(both.out)")
            let alone = try await SfubotProcess.run(["verify", diskB.path])
            #expect(alone.status == 65 && alone.out.contains("give the folder of every owner"), "\(alone.out)")

            // One byte changed in what A's last checkpoint covers.
            let line = try #require(both.out.split(separator: "\n").first { $0.hasPrefix("proven: rec/") && !$0.contains(" 0..<0 ") })
            let parts = line.split(separator: " ")
            let file = dir.appendingPathComponent(String(parts[1]))
            let proven = try #require(Int(parts[3].dropFirst(4)))
            var data = try Data(contentsOf: file)
            data[proven / 2] ^= 0x01
            try data.write(to: file)
            let tampered = try await SfubotProcess.run(["verify", out.path, diskB.path])
            #expect(tampered.status == 65 && tampered.out.contains("problem: \(parts[1])"), "\(tampered.out)")
        } catch {
            await pair.stop()
            throw error
        }
        await pair.stop()
    }
}
