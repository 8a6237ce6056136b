import Foundation
import Testing
import TestSupport

/// An instance that claims a job it may not run (issue 39 item 4, the class of per-instance
/// settings a cluster assumed equal): it releases the job for another instead of failing it.
extension MediaScene.ClusterTests {
    @Test("a recording through a Janus only A allows, POSTed while A is full: B claims it, refuses it (its --janus-allow), releases it; A takes it once it has room and records the tone")
    func aJobOneInstanceMayNotRunGoesToTheOther() async throws {
        let room = try await Scene.createRoom()
        let dir = try Scene.tempDirectory("cluster-refusal")
        let pg = try await LocalPostgres.start(port: 15454)
        // The same Janus under a name only A's allow-list holds.
        let onlyA = Scene.janusURL!.replacingOccurrences(of: "127.0.0.1", with: "localhost")
        var pair = Pair(pg: pg, dir: dir, a: try await Self.serve("a", port: 18591, dir: dir, database: pg.url(), maxJobs: 1,
                                                                 extra: ["--janus-allow", onlyA]))
        let player = try await player(room: room, dir: dir)
        defer { player.signal(SIGKILL) }
        do {
            let a = pair.a
            // A is full with a playback into another room.
            let tone = try await Audio.tone(Self.tone, seconds: 3, in: dir)
            let filler = try await a.request("POST", "/v1/playbacks", json: ["room": try await Scene.createRoom(), "key": ["hex": key],
                                                                              "file": tone.path, "loop": true, "display": "8:Filler"])
            let fillerID = try #require(try filler.json()["id"] as? String, "\(filler.text)")
            _ = try await a.waitFor("/v1/playbacks/\(fillerID)") { $0["owner"] as? String == "a" && $0["state"] as? String == "running" }
            let b = try await Self.serve("b", port: 18592, dir: dir, database: pg.url(), token: a.token, maxJobs: 1)
            pair.b = b

            let rec = try await a.request("POST", "/v1/recordings", json: ["room": room, "key": ["hex": key], "out": "rec", "janus": onlyA])
            #expect(rec.status == 201, "\(rec.text)")
            let id = try #require(try rec.json()["id"] as? String)
            // B took it, could not run it, and gave it back: waiting, B's reason kept, B's run released.
            let waiting = try await b.waitFor("/v1/recordings/\(id)") { s in
                Self.owners(s).first?["endCause"] as? String == "released" && s["state"] as? String == "starting"
            }
            #expect(Self.owners(waiting).map { $0["instance"] as? String } == ["b"], "\(waiting)")
            let reason = try await pg.psql("SELECT refused->>'b' FROM jobs WHERE id = '\(id)'")
            #expect(reason.contains("not a Janus this instance may use"), "\(reason)")
            #expect(try await pg.psql("SELECT state FROM jobs WHERE id = '\(id)'") == "queued", "not failed: A has not refused it")

            // A has room: it takes the job and records.
            let stopped = try await a.request("DELETE", "/v1/playbacks/\(fillerID)")
            #expect(stopped.status == 200, "\(stopped.text)")
            let live = try await a.waitFor("/v1/recordings/\(id)") { $0["owner"] as? String == "a" && Self.live($0, frames: 100) }
            #expect(Self.owners(live).map { $0["instance"] as? String } == ["b", "a"], "\(live)")
            let final = try await b.request("DELETE", "/v1/recordings/\(id)").json()
            #expect(final["state"] as? String == "done", "\(final)")
            let manifest = try JSONSerialization.jsonObject(with: Data(contentsOf: dir.appendingPathComponent("rec/manifest.json"))) as! [String: Any]
            let feeds = manifest["feeds"] as? [[String: Any]] ?? []
            #expect(feeds.contains { (($0["frames"] as? [String: Any])?["opened"] as? Int ?? 0) > 100 }, "A recorded the tone: \(feeds)")
        } catch {
            await pair.stop()
            throw error
        }
        await pair.stop()
    }
}
