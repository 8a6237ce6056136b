import Foundation
import Testing
import TestSupport

/// The owner cut off from the database by a firewall (iptables DROP: no reset, no FIN): it must
/// stop writing before its lease can run out, and the other takes the job once it has. The
/// session's end from either side (`ss -K`, `pg_terminate_backend`) is tested at the store's
/// level (ClusterStoreTests.sessionLost); this one needs the recorder's files, to check the
/// owner's last write came before the other's first.
extension MediaScene.ClusterTests {
    @Test("the owner cut off from the database (iptables): it stops writing before its lease ends, then the other carries on")
    func fencedWhenCutOff() async throws {
        let room = try await Scene.createRoom()
        let dir = try Scene.tempDirectory("cluster-cut")
        // A reaches the database on 127.0.0.2, B on 127.0.0.1: the rule cuts A alone.
        let pg = try await LocalPostgres.start(port: 15433, addresses: ["127.0.0.1", "127.0.0.2"])
        var pair = Pair(pg: pg, dir: dir, a: try await Self.serve("a", port: 18525, dir: dir, database: pg.url(address: "127.0.0.2")))
        let player = try await player(room: room, dir: dir)
        defer { player.signal(SIGKILL) }
        let rule = ["INPUT", "-p", "tcp", "-d", "127.0.0.2", "--dport", "15433", "-j", "DROP"]
        do {
            let a = pair.a
            let (id, out, mine) = try await recordOnAThenStartB(&pair, room: room, bPort: 18526)
            let b = try #require(pair.b)
            let cut = try await ChildProcess.run("/usr/sbin/iptables", ["-I"] + rule)
            #expect(cut.status == 0, "\(cut.errText)")
            let taken = try await b.waitFor("/v1/recordings/\(id)", within: .seconds(40)) { $0["owner"] as? String == "b" && Self.live($0, frames: 50) }
            _ = try await ChildProcess.run("/usr/sbin/iptables", ["-D"] + rule)
            // Dropped packets end no session on the server: B went by the lease.
            #expect(Self.owners(taken).last?["cause"] as? String == "failover" && Self.owners(taken).first?["endCause"] as? String == "lease expired", "\(Self.owners(taken))")
            // When B took it, by the database's clock (one machine: the files' clock too).
            let since = try await pg.psql("SELECT extract(epoch FROM started) FROM job_owners WHERE job_id = '\(id)' AND owner = 'b'")
            let bStarted = Date(timeIntervalSince1970: try #require(Double(since)))
            for name in mine {
                let attributes = try FileManager.default.attributesOfItem(atPath: out.appendingPathComponent(name).path)
                let written = try #require(attributes[.modificationDate] as? Date)
                print("cluster: A's \(name) last written \(String(format: "%.2f", bStarted.timeIntervalSince(written))) s before B took the job")
                #expect(written < bStarted, "\(name) written by A after B took the job")
            }
            #expect(try await a.metric("sfubot_cluster_jobs_fenced_total") == 1)
            // Its own session's unanswered ping usually stops the job before a renewal is missed.
            print("cluster: A's missed lease renewals: \(try await a.metric("sfubot_cluster_lease_renewals_missed_total"))")
            // Back on the database, A sees the job as B's.
            let seen = try await a.waitFor("/v1/recordings/\(id)", within: .seconds(20)) { $0["owner"] as? String == "b" }
            #expect(Self.owners(seen).map { $0["instance"] as? String } == ["a", "b"], "\(seen)")
            let final = try await a.request("DELETE", "/v1/recordings/\(id)").json()
            #expect(final["state"] as? String == "done", "\(final)")
        } catch {
            _ = try? await ChildProcess.run("/usr/sbin/iptables", ["-D"] + rule)
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
