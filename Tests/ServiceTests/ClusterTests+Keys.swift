import Foundation
import Testing
import TestSupport

/// Keys handed to a running framecryptor job with `--database`: only its owner takes them, the
/// database never holds them, and after a failover the client hands them to the new owner.
extension MediaScene.ClusterTests {
    @Test("POST …/keys: the owner takes the key (204), the other instance answers 409 naming the owner; the database never holds it; after the owner's death the new owner takes it again")
    func keysGoToTheOwnerOnly() async throws {
        let room = try await Scene.createRoom()
        let dir = try Scene.tempDirectory("cluster-keys")
        let pg = try await LocalPostgres.start(port: 15442)
        var pair = Pair(pg: pg, dir: dir, a: try await Self.serve("a", port: 18563, dir: dir, database: pg.url()))
        do {
            let a = pair.a
            let b = try await Self.serve("b", port: 18564, dir: dir, database: pg.url(), token: a.token)
            pair.b = b
            let hex = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
            let shared = String(repeating: "0f", count: 16)
            let rec = try await a.request("POST", "/v1/recordings", json: [
                "room": room, "out": dir.appendingPathComponent("rec").path, "key": ["hex": shared],
                "format": ["frame": "framecryptor", "ratchetSalt": "PQSRTCFrameEncryptionSalt"],
            ])
            #expect(rec.status == 201, "\(rec.text)")
            let id = try #require(try rec.json()["id"] as? String)
            let running = try await a.waitFor("/v1/recordings/\(id)") { $0["owner"] != nil && $0["state"] as? String == "running" }
            let first = try #require(running["owner"] as? String)
            let (owner, other) = first == "a" ? (a, b) : (b, a)
            let line: [String: Any] = ["participant": "5", "index": 1, "key": hex]

            let refused = try await other.request("POST", "/v1/recordings/\(id)/keys", json: line)
            #expect(refused.status == 409 && refused.text.contains("runs on instance \(first)"), "\(refused.text)")
            let taken = try await owner.request("POST", "/v1/recordings/\(id)/keys", json: line)
            #expect(taken.status == 204, "\(taken.text)")
            // The request's own key is kept with the job (as a call key is); the handed-in one is not.
            let rows = try await pg.psql("SELECT count(*) FROM jobs WHERE spec::text LIKE '%\(hex)%' OR status::text LIKE '%\(hex)%'")
            #expect(rows == "0", "the database holds the handed-in key")
            #expect(try await pg.psql("SELECT count(*) FROM jobs WHERE spec::text LIKE '%\(shared)%'") == "1")

            // The owner dies: the other takes the job with the request's keys only, and takes the key when handed it again.
            owner.process.signal(SIGKILL)
            _ = await owner.process.exit(within: .seconds(10))
            let moved = try await other.waitFor("/v1/recordings/\(id)", within: .seconds(40)) {
                $0["owner"] as? String != first && $0["owner"] != nil && $0["state"] as? String == "running"
            }
            #expect(moved["owner"] as? String != first, "\(moved)")
            let again = try await other.request("POST", "/v1/recordings/\(id)/keys", json: line)
            #expect(again.status == 204, "\(again.text)")
            let stopped = try await other.request("DELETE", "/v1/recordings/\(id)")
            #expect(stopped.status == 200 && !stopped.text.contains(hex))
            let gone = try await other.request("POST", "/v1/recordings/\(id)/keys", json: line)
            #expect(gone.status == 409 && gone.text.contains("ended"), "\(gone.text)")
        } catch {
            await pair.stop()
            throw error
        }
        await pair.stop()
    }
}
