import Foundation
import ObjectStore
import Testing
import TestSupport

/// A recording's uploads from each owner's own disk, end to end: the tone decoded from the
/// bucket across a failover. What the store decides of uploads (pinning, takeover, abandon) is
/// checked at its level: UploadTaskTests, ClusterAbandonTests.
extension MediaScene.ClusterTests {
    @Test("the owner SIGKILLed, the other takes over on its own disk: the bucket waits for the first disk (waitingFor, no merged manifest); restarted, the first queues its folder under part-1/ (killed again with it pending: not taken by the other), then uploads it; the merged manifest names both, the tone's hole measured from the bucket, verify one chain")
    func uploadsFromOwnDisks() async throws {
        if let missing = S3Venv.missing { Issue.record(Comment(rawValue: missing)); return }
        let room = try await Scene.createRoom()
        let dir = try Scene.tempDirectory("cluster-disks")
        let moto = try await LocalServer.moto(port: 18599)
        let store = try await Self.store(moto, dir: dir)
        let pg = try await LocalPostgres.start(port: 15438)
        var pair = Pair(pg: pg, dir: dir, a: try await Self.serve("a", port: 18536, dir: dir, database: pg.url(), extra: store.flags))
        let player = try await player(room: room, dir: dir)
        var refused = false
        defer { player.signal(SIGKILL) }
        do {
            let out = dir.appendingPathComponent("rec"), diskB = dir.appendingPathComponent("rec-b")
            for d in [out, diskB] { try FileManager.default.createDirectory(at: d, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700]) }
            let rec = try await pair.a.request("POST", "/v1/recordings", json: ["room": room, "key": ["hex": key], "out": out.path])
            let id = try #require(try rec.json()["id"] as? String)
            _ = try await pair.a.waitFor("/v1/recordings/\(id)") { $0["owner"] as? String == "a" && Self.live($0, frames: 150) }
            // A's first checkpoint published, so the bucket's folders verify as one chain.
            let deadline = ContinuousClock.now + .seconds(40)
            func published() async throws -> Int { Int(try await pg.psql("SELECT coalesce(chain_head->>'checkpoint', '0') FROM jobs WHERE id = '\(id)'")) ?? 0 }
            while try await published() < 1, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(300)) }
            let b = try await ServeProcess.start(port: 18537, in: dir, stateDir: dir.appendingPathComponent("state-b"), token: pair.a.token,
                                                 extra: ["--database", pg.url(), "--instance-id", "b", "--signing-key",
                                                         dir.appendingPathComponent("state-a/signing.key").path] + store.flags,
                                                 launcher: Self.ownDisk(diskB, at: out))
            pair.b = b
            let killed = Date()
            pair.a.process.signal(SIGKILL)
            _ = await pair.a.process.exit(within: .seconds(10))
            _ = try await b.waitFor("/v1/recordings/\(id)", within: .seconds(40)) { $0["owner"] as? String == "b" && Self.live($0, frames: 100) }
            try await Task.sleep(for: .seconds(2))
            let final = try await b.request("DELETE", "/v1/recordings/\(id)").json()
            #expect(final["state"] as? String == "done", "\(final)")

            // B's folder is in the bucket; A's is on A's disk: the recording waits for it.
            let waiting = try await b.waitFor("/v1/recordings/\(id)", within: .seconds(60)) { s in
                let u = s["uploads"] as? [String: Any]
                return (u?["uploaded"] as? Int ?? 0) > 0 && u?["pending"] as? Int == 0
            }
            let shown = try #require(waiting["uploads"] as? [String: Any])
            #expect(shown["waitingFor"] as? [String] == ["a"] && shown["finished"] as? Bool == false, "\(shown)")
            #expect((try? await store.client.get(key: "rec/\(id)/recording.json")) == nil, "no merged manifest while a folder is missing")
            let fromB = try #require(shown["uploaded"] as? Int)

            // A comes back on its state directory (its own disk) while the store is refused: it
            // queues its folder, cannot send it, and is SIGKILLed again. B must not take those
            // files: the same path on B's disk is another folder.
            try await Faults.refuseTCP(port: 18599)
            refused = true
            // It forgets ended jobs after 1 s: one whose uploads are under way must stay.
            pair.a = try await Self.serve("a", port: 18538, dir: dir, database: pg.url(), token: pair.a.token, extra: store.flags + ["--keep-finished", "1"])
            _ = try await b.waitFor("/v1/recordings/\(id)", within: .seconds(30)) { s in
                let u = s["uploads"] as? [String: Any]
                return u?["waitingFor"] == nil && (u?["pending"] as? Int ?? 0) > 0
            }
            pair.a.process.signal(SIGKILL)
            _ = await pair.a.process.exit(within: .seconds(10))
            try await Task.sleep(for: .seconds(4))
            let holders = try await pg.psql("SELECT string_agg(DISTINCT pinned_to, ',') FROM tasks WHERE kind = 'upload' AND job_id = '\(id)' AND state IN ('available', 'running')")
            #expect(holders == "a", "A's own disk's files wait for A: \(holders)")
            #expect(try await b.metric("sfubot_upload_takeovers_total") == 0)
            try await Faults.allowTCP(port: 18599)
            refused = false

            // Back again with the store: A uploads its folder.
            pair.a = try await Self.serve("a", port: 18531, dir: dir, database: pg.url(), token: pair.a.token, extra: store.flags)
            let done = try await b.waitFor("/v1/recordings/\(id)", within: .seconds(60)) { s in
                ((s["uploads"] as? [String: Any])?["finished"] as? Bool) == true
            }
            let settled = try #require(done["uploads"] as? [String: Any])
            #expect(settled["waitingFor"] == nil && (settled["uploaded"] as? Int ?? 0) > fromB + 1, "\(settled)")
            let keys = try await pg.psql("SELECT string_agg(args->>'name', ',' ORDER BY args->>'name') FROM tasks WHERE kind = 'upload' AND job_id = '\(id)' AND args->>'by' = 'a' AND args->>'name' <> 'recording.json'")
            #expect(keys.split(separator: ",").allSatisfy { $0.hasPrefix("part-1/") } && keys.contains("part-1/manifest.json"), "A's folder under part-1/: \(keys)")

            let bucket = dir.appendingPathComponent("bucket")
            let merged = try await Self.checkMerged(store.client, id: id, owners: ["a", "b"], into: bucket)
            let onB = try await Gaps.measure(bucket, userID: "9", frequency: Self.tone)
            let onA = try await Gaps.measure(bucket.appendingPathComponent("part-1"), userID: "9", frequency: Self.tone)
            let coverage = Gaps.coverage((onA.stretches + onB.stretches).map { ($0.lowerBound, $0.upperBound) }, minimumHole: 0.1)
            let hole = coverage.longestHole(after: killed.addingTimeInterval(-1), until: try #require(coverage.last))
            print("cluster own disks: SIGKILL of the owner → \(String(format: "%.2f", hole)) s of the tone missing across both folders in the bucket; "
                  + "the merged manifest's gap \(String(format: "%.2f", merged.gap)) s")
            #expect(onA.coveredSeconds > 2 && onB.coveredSeconds > 2, "each folder holds its part of the tone")
            #expect(hole <= 5.0, "target: at most 5 s missing after a SIGKILL of the owner")
            let verified = try await SfubotProcess.run(["verify", bucket.appendingPathComponent("part-1").path, bucket.path])
            // The dead owner's unproven tail (after its last checkpoint) makes it 75, not 0.
            #expect(verified.status == 75 && verified.out.contains("took over (failover) from a"), "\(verified.out)\n\(verified.err)")
        } catch {
            if refused { try? await Faults.allowTCP(port: 18599) }
            await pair.stop()
            await moto.stop()
            throw error
        }
        await pair.stop()
        await moto.stop()
    }
}
