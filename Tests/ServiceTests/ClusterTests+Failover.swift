import Foundation
import Testing
import TestSupport

/// The owner of a recording ends mid-call, as a crash or a rolling update ends it; measured from
/// the decoded files in the bucket.
extension MediaScene.ClusterTests {
    /// How an owner ends: killed (its jobs failed over once its session is seen gone), or
    /// SIGTERMed as a rolling update does (its jobs released at once).
    enum OwnerEnd: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case sigkill, sigterm
        var testDescription: String { rawValue }
        var signal: Int32 { self == .sigkill ? SIGKILL : SIGTERM }
        var handover: Handover { self == .sigkill ? .failover : .released }
    }

    @Test("the owner SIGKILLed (failover), or SIGTERMed as a rolling update does (exits 0, the job released at once), mid-recording: the other takes the job, the recording goes on in a new segment; the bucket's merged manifest names both owners, their segments and the gap",
          arguments: OwnerEnd.allCases)
    func ownerEnds(_ end: OwnerEnd) async throws {
        if let missing = S3Venv.missing { Issue.record(Comment(rawValue: missing)); return }
        let room = try await Scene.createRoom()
        let dir = try Scene.tempDirectory("cluster-\(end.rawValue)")
        let moto = try await LocalServer.moto(port: 18597)
        let store = try await Self.store(moto, dir: dir)
        let pg = try await LocalPostgres.start(port: 15432)
        var pair = Pair(pg: pg, dir: dir, a: try await Self.serve("a", port: 18523, dir: dir, database: pg.url(), extra: store.flags))
        let player = try await player(room: room, dir: dir)
        defer { player.signal(SIGKILL) }
        do {
            let a = pair.a
            let b = try await Self.serve("b", port: 18524, dir: dir, database: pg.url(), token: a.token, extra: store.flags)
            pair.b = b
            let out = dir.appendingPathComponent("rec")
            let rec = try await a.request("POST", "/v1/recordings", json: ["room": room, "key": ["hex": key], "out": out.path])
            let id = try #require(try rec.json()["id"] as? String)
            let running = try await a.waitFor("/v1/recordings/\(id)") { Self.live($0, frames: 150) }
            let first = try #require(running["owner"] as? String)
            let (owner, other) = first == "a" ? (a, b) : (b, a)
            let ended = Date()
            owner.process.signal(end.signal)
            let status = await owner.process.exit(within: .seconds(30))
            if end == .sigterm { #expect(status == 0, "a SIGTERMed instance that released its jobs exits 0") }
            let changed = try await other.waitFor("/v1/recordings/\(id)", within: .seconds(40)) { $0["owner"] as? String != first }
            print("cluster: \(end) of the owner → the job taken after \(String(format: "%.2f", Date().timeIntervalSince(ended))) s")
            // Live on the new owner, in files of its own (not the status the old owner published last).
            let taken = try await other.waitFor("/v1/recordings/\(id)", within: .seconds(40)) { s in
                s["owner"] as? String == changed["owner"] as? String && Self.live(s, frames: 100, notIn: Self.files(running))
            }
            let history = Self.owners(taken)
            #expect(history.map { $0["instance"] as? String } == [first, taken["owner"] as? String], "\(taken)")
            // A SIGKILL's job is taken on its session's end, not its lease's: the kernel closed the killed owner's socket.
            #expect(history.last?["cause"] as? String == end.handover.cause && history.first?["endCause"] as? String == end.handover.endCause, "\(history)")
            #expect(taken["resumes"] as? Int == 1)
            let failovers = try await other.metric("sfubot_cluster_failovers_total")
            #expect(failovers == (end == .sigkill ? 1 : 0), "a release is not a failover")
            try await Task.sleep(for: .seconds(2))
            let final = try await other.request("DELETE", "/v1/recordings/\(id)").json()
            #expect(final["state"] as? String == "done", "\(final)")

            // Measured from the files in the bucket, as the merged manifest lists them.
            let uploaded = try await other.waitFor("/v1/recordings/\(id)", within: .seconds(60)) { s in
                ((s["uploads"] as? [String: Any])?["finished"] as? Bool) == true
            }
            let merged = try await Self.checkMerged(store.client, id: id, owners: [first, try #require(taken["owner"] as? String)],
                                                    into: dir.appendingPathComponent("bucket"), handover: end.handover)
            #expect((uploaded["uploads"] as? [String: Any])?["uploaded"] as? Int == merged.files + 1, "the files it lists and itself: \(uploaded)")
            let coverage = try await Gaps.measure(dir.appendingPathComponent("bucket"), userID: "9", frequency: Self.tone)
            let hole = coverage.longestHole(after: ended.addingTimeInterval(-1), until: try #require(coverage.last))
            print("cluster: \(end) of the owner → \(String(format: "%.2f", hole)) s of the tone missing (holes \(coverage.holes)); "
                  + "the merged manifest's gap \(String(format: "%.2f", merged.gap)) s")
            #expect(hole <= 5.0, "target: at most 5 s missing after a SIGKILL of the owner")
            #expect(merged.gap >= hole - 0.5 && merged.gap <= hole + 1.5, "the merged manifest's gap (\(merged.gap) s) is the hole in the decoded files (\(hole) s)")
            let manifest = try JSONSerialization.jsonObject(with: Data(contentsOf: dir.appendingPathComponent("bucket/manifest.json"))) as! [String: Any]
            #expect(((manifest["gaps"] as? [[String: Any]]) ?? []).count >= 1, "the time away is a gap in the manifest")
            // One folder both owners wrote, as the bucket holds it (the local copies are gone once
            // verified there): one chain, the takeover named in it.
            let verified = try await SfubotProcess.run(["verify", dir.appendingPathComponent("bucket").path])
            #expect(verified.status == 0 && verified.out.contains("took over (\(end.handover.cause)) from \(first)"), "\(verified.out)\n\(verified.err)")
        } catch {
            await pair.stop()
            await moto.stop()
            throw error
        }
        await pair.stop()
        await moto.stop()
    }
}
