import Bot
import Foundation
import Testing
import TestSupport

/// The owner's database connections destroyed under it (`ss -K`, as a firewall's reset or a
/// killed backend would): the server ends its session, so the other instance may take the job
/// without waiting for the lease; the owner must have stopped writing first.
extension MediaScene.ClusterTests {
    @Test("the owner's database connections killed (ss -K on its side, pg_terminate_backend on the server's): it stops writing at once, the job is taken again within the takeover grace, after the owner's last write",
          arguments: ["ss -K", "pg_terminate_backend"])
    func fencedWhenConnectionsKilled(how: String) async throws {
        let room = try await Scene.createRoom()
        let dir = try Scene.tempDirectory("cluster-sskill")
        // A reaches the database on 127.0.0.2, B on 127.0.0.1: the filter kills A's sockets alone.
        let pg = try await LocalPostgres.start(port: 15436, addresses: ["127.0.0.1", "127.0.0.2"])
        var pair = Pair(pg: pg, dir: dir, a: try await Self.serve("a", port: 18529, dir: dir, database: pg.url(address: "127.0.0.2")))
        let player = try await player(room: room, dir: dir)
        defer { player.signal(SIGKILL) }
        do {
            let a = pair.a
            let (id, out, mine) = try await recordOnAThenStartB(&pair, room: room, bPort: 18530)
            let b = try #require(pair.b)
            // ss -K destroys A's sockets to the database (to 127.0.0.2: the pool's, LISTEN's, its
            // own session's; its kernel resets each towards the server); pg_terminate_backend
            // ends A's own session on the server's side (A gets FATAL and a FIN).
            let killed = Date()
            if how == "ss -K" {
                let cut = try await ChildProcess.run("/usr/bin/ss", ["-K", "dst", "127.0.0.2", "dport", "=", ":15436"])
                #expect(cut.outText.contains("15436"), "ss -K destroyed A's sockets: \(cut.outText) \(cut.errText)")
            } else {
                // A's own session alone, found by the lock it holds (its pool goes on working).
                let ended = try await pg.psql("""
                    SELECT count(pg_terminate_backend(l.pid)) FROM pg_locks l JOIN instance_sessions s ON l.locktype = 'advisory' AND l.granted
                        AND l.objsubid = 1 AND l.classid = (s.key >> 32)::oid AND l.objid = (s.key & 4294967295)::oid
                    WHERE s.instance = 'a' AND s.gone_since IS NULL
                    """)
                #expect(ended == "1", "A's session ended: \(ended)")
            }
            // Either instance may take it: A too, once its new session is up (its own run of the job is
            // over by then). Either way a second run, in new segment files.
            let taken = try await b.waitFor("/v1/recordings/\(id)", within: .seconds(40)) { s in
                Self.owners(s).count == 2 && Self.live(s, frames: 50, notIn: Set(mine))
            }
            let history = Self.owners(taken)
            #expect(history.last?["cause"] as? String == "failover" && history.first?["endCause"] as? String == "session ended", "\(history)")
            let since = try await pg.psql("SELECT extract(epoch FROM started) FROM job_owners WHERE job_id = '\(id)' AND seq = 2")
            let bStarted = Date(timeIntervalSince1970: try #require(Double(since)))
            let took = bStarted.timeIntervalSince(killed)
            #expect(took < 4, "taken before A's lease (4 s) could have run out: \(took) s")
            #expect(try await a.metric("sfubot_cluster_jobs_fenced_total") == 1)
            print("cluster: \(how): the job taken again by \(history.last?["instance"] as? String ?? "?")")
            let final = try await b.request("DELETE", "/v1/recordings/\(id)").json()
            #expect(final["state"] as? String == "done", "\(final)")
            // B's first frame, as its manifest names it; A's files' last change (its last frame
            // or its files' finishing, whichever came later).
            let manifest = try RecordingManifest.read(from: out)
            let bFirst = try #require(manifest.feeds.filter { !mine.contains($0.file) }.compactMap(\.firstFrame).min(), "\(manifest.feeds.map(\.file))")
            var lastWrite = Date.distantPast
            for name in mine {
                let attributes = try FileManager.default.attributesOfItem(atPath: out.appendingPathComponent(name).path)
                lastWrite = max(lastWrite, try #require(attributes[.modificationDate] as? Date))
            }
            print("cluster: \(how) of the owner's database connections: A's files last written \(String(format: "%.2f", lastWrite.timeIntervalSince(killed))) s after, "
                  + "the job taken again \(String(format: "%.2f", took)) s after, its first frame \(String(format: "%.2f", bFirst.timeIntervalSince(killed))) s after")
            #expect(lastWrite < bStarted, "A wrote its files after the job was taken again")
            #expect(lastWrite < bFirst, "A's last write came after the next run's first frame")
        } catch {
            await pair.stop()
            throw error
        }
        await pair.stop()
    }

    /// A recording posted to A and live there, then B started beside it: the job's id, its
    /// folder, and A's files so far. None of those may change once B holds the job
    /// (manifest.json and proof.jsonl are the job's, continued by whoever holds it).
    func recordOnAThenStartB(_ pair: inout Pair, room: Int64, bPort: Int) async throws -> (id: String, out: URL, mine: [String]) {
        let a = pair.a
        let out = pair.dir.appendingPathComponent("rec")
        let rec = try await a.request("POST", "/v1/recordings", json: ["room": room, "key": ["hex": key], "out": out.path])
        let id = try #require(try rec.json()["id"] as? String)
        _ = try await a.waitFor("/v1/recordings/\(id)") { $0["owner"] as? String == "a" && Self.live($0, frames: 100) }
        pair.b = try await Self.serve("b", port: bPort, dir: pair.dir, database: pair.pg.url(), token: a.token)
        let mine = try FileManager.default.contentsOfDirectory(atPath: out.path).filter { $0 != "manifest.json" && $0 != "proof.jsonl" && !$0.hasPrefix(".") }
        #expect(!mine.isEmpty)
        return (id, out, mine)
    }
}
