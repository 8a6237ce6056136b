import Foundation
import Testing
import TestSupport

extension MediaScene.ClusterTests {
    /// How Kubernetes ends a pod in a rolling update: SIGTERM, then SIGKILL 30 s later.
    @Test("the owner SIGTERMed (a rolling update): it finishes its files, releases the job and exits 0; the other takes it at once (released, no failover), and the bucket holds the whole recording with the gap named")
    func releasedOnSigterm() async throws {
        if let missing = S3Venv.missing { Issue.record(Comment(rawValue: missing)); return }
        let room = try await Scene.createRoom()
        let dir = try Scene.tempDirectory("cluster-term")
        let moto = try await LocalServer.moto(port: 18600)
        let store = try await Self.store(moto, dir: dir)
        let pg = try await LocalPostgres.start(port: 15440)
        var pair = Pair(pg: pg, dir: dir, a: try await Self.serve("a", port: 18542, dir: dir, database: pg.url(), extra: store.flags))
        let player = try await player(room: room, dir: dir)
        defer { player.signal(SIGKILL) }
        do {
            let a = pair.a
            let b = try await Self.serve("b", port: 18543, dir: dir, database: pg.url(), token: a.token, extra: store.flags)
            pair.b = b
            let out = dir.appendingPathComponent("rec")
            let rec = try await a.request("POST", "/v1/recordings", json: ["room": room, "key": ["hex": key], "out": out.path])
            let id = try #require(try rec.json()["id"] as? String)
            let running = try await a.waitFor("/v1/recordings/\(id)") { Self.live($0, frames: 150) }
            let first = try #require(running["owner"] as? String)
            let (owner, other) = first == "a" ? (a, b) : (b, a)
            let termed = Date()
            owner.process.signal(SIGTERM)
            let status = await owner.process.exit(within: .seconds(30))
            #expect(status == 0, "a SIGTERMed instance that released its jobs exits 0")
            let taken = try await other.waitFor("/v1/recordings/\(id)", within: .seconds(20)) { s in s["owner"] as? String != first }
            print("cluster: SIGTERM of the owner → exited \(status.map(String.init) ?? "?"), the job taken after \(String(format: "%.2f", Date().timeIntervalSince(termed))) s")
            _ = try await other.waitFor("/v1/recordings/\(id)") { Self.live($0, frames: 50) }
            let history = Self.owners(taken)
            #expect(history.map { $0["instance"] as? String } == [first, taken["owner"] as? String], "\(taken)")
            #expect(history.last?["cause"] as? String == "released" && history.first?["endCause"] as? String == "released", "\(history)")
            #expect(try await other.metric("sfubot_cluster_failovers_total") == 0, "a release is not a failover")
            try await Task.sleep(for: .seconds(2))
            let final = try await other.request("DELETE", "/v1/recordings/\(id)").json()
            #expect(final["state"] as? String == "done", "\(final)")

            let uploaded = try await other.waitFor("/v1/recordings/\(id)", within: .seconds(60)) { s in
                ((s["uploads"] as? [String: Any])?["finished"] as? Bool) == true
            }
            let merged = try await Self.checkMerged(store.client, id: id, owners: [first, try #require(taken["owner"] as? String)],
                                                    into: dir.appendingPathComponent("bucket"), handover: .released)
            #expect((uploaded["uploads"] as? [String: Any])?["uploaded"] as? Int == merged.files + 1, "the files it lists and itself: \(uploaded)")
            let coverage = try await Gaps.measure(dir.appendingPathComponent("bucket"), userID: "9", frequency: Self.tone)
            let hole = coverage.longestHole(after: termed.addingTimeInterval(-1), until: try #require(coverage.last))
            print("cluster: SIGTERM of the owner → \(String(format: "%.2f", hole)) s of the tone missing (holes \(coverage.holes)); "
                  + "the merged manifest's gap \(String(format: "%.2f", merged.gap)) s")
            #expect(hole <= 5.0, "no worse than a SIGKILL's target")
            #expect(merged.gap >= hole - 0.5 && merged.gap <= hole + 1.5, "the merged manifest's gap (\(merged.gap) s) is the hole in the decoded files (\(hole) s)")
            let verified = try await SfubotProcess.run(["verify", dir.appendingPathComponent("bucket").path])
            #expect(verified.status == 0 && verified.out.contains("took over (released) from \(first)"), "\(verified.out)\n\(verified.err)")
        } catch {
            await pair.stop()
            await moto.stop()
            throw error
        }
        await pair.stop()
        await moto.stop()
    }
}
