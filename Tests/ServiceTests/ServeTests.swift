import Foundation
import Testing
import TestSupport

/// `sfubot serve` driven over HTTP only, against the real Janus: jobs, refusals, shutdown
/// and a restart from its state folder.
extension MediaScene {
@Suite struct ServeTests {
    let key = String(repeating: "5a", count: 32)

    @Test("a recording and a looping playback in one E2EE room: counted, stopped by DELETE, the recording decodes to the tone")
    func recordsWhatItPlays() async throws {
        let room = try await Scene.createRoom()
        let dir = try Scene.tempDirectory("serve")
        let tone = try await Audio.tone(440, seconds: 3, in: dir)
        let serve = try await ServeProcess.start(port: 18481, in: dir)
        defer { serve.process.signal(SIGKILL) }
        let ready = try await serve.request("GET", "/readyz", auth: false)
        #expect(ready.status == 200, "\(ready.text)")

        let out = dir.appendingPathComponent("rec")
        let rec = try await serve.request("POST", "/v1/recordings", json: [
            "room": room, "key": ["hex": key], "out": out.path, "mix": out.appendingPathComponent("mix.opus").path,
        ])
        #expect(rec.status == 201, "\(rec.text)")
        let recID = try #require(try rec.json()["id"] as? String)
        #expect(!rec.text.contains(key), "the key is never shown")
        let play = try await serve.request("POST", "/v1/playbacks", json: [
            "room": room, "key": ["hex": key], "file": tone.path, "loop": true, "display": "7:Tone",
        ])
        #expect(play.status == 201, "\(play.text)")
        let playID = try #require(try play.json()["id"] as? String)

        // Until the recorder has opened frames of the player's feed.
        let running = try await serve.waitFor("/v1/recordings/\(recID)") { s in
            ((s["feeds"] as? [[String: Any]]) ?? []).contains { ($0["framesOpened"] as? Int ?? 0) > 100 }
        }
        #expect(running["state"] as? String == "running", "\(running)")
        let feeds = try #require(running["feeds"] as? [[String: Any]])
        #expect(feeds.allSatisfy { ($0["framesDropped"] as? Int) == 0 }, "\(feeds)")
        let playing = try await serve.request("GET", "/v1/playbacks/\(playID)").json()
        #expect(playing["state"] as? String == "running")
        #expect(((playing["frames"] as? [String: Any])?["audioSealed"] as? Int ?? 0) > 100, "\(playing)")
        let listed = try await serve.request("GET", "/v1/recordings").list()
        #expect(listed.map { $0["id"] as? String } == [recID])

        let opened = try await serve.metric("sfubot_frames_opened_total")
        let sealed = try await serve.metric("sfubot_frames_sealed_total")
        let jobsRunning = try await serve.metric("sfubot_jobs", matching: "state=\"running\"")
        print("serve /metrics: frames opened \(opened), sealed \(sealed), jobs running \(jobsRunning)")
        #expect(opened > 100 && sealed > 100 && jobsRunning == 2)

        let stoppedPlay = try await serve.request("DELETE", "/v1/playbacks/\(playID)")
        let playState = try stoppedPlay.json()["state"] as? String
        #expect(stoppedPlay.status == 200 && playState == "done", "\(stoppedPlay.text)")
        let stoppedRec = try await serve.request("DELETE", "/v1/recordings/\(recID)")
        let final = try stoppedRec.json()
        #expect(stoppedRec.status == 200 && final["state"] as? String == "done", "\(stoppedRec.text)")
        let files = try #require(final["files"] as? [String])
        let opus = try #require(files.first { $0.hasSuffix(".opus") && !$0.hasSuffix("mix.opus") })
        let samples = try await Audio.decode(URL(fileURLWithPath: opus))
        #expect(samples.count > 48_000, "more than a second recorded")
        #expect(Audio.dominantFrequency(samples).map { abs($0 - 440) < 10 } == true)
        let manifest = try JSONSerialization.jsonObject(with: Data(contentsOf: out.appendingPathComponent("manifest.json"))) as! [String: Any]
        #expect(manifest["ended"] != nil)

        serve.process.signal(SIGTERM)
        #expect(await serve.process.exit(within: .seconds(30)) == 0)
    }

    @Test("bad requests get 401, 400 naming the field, 403, 404, 409 and 413, and hurt neither the service nor its job")
    func refusals() async throws {
        let room = try await Scene.createRoom()
        let dir = try Scene.tempDirectory("serve-refusals")
        let serve = try await ServeProcess.start(port: 18482, in: dir)
        defer { serve.process.signal(SIGKILL) }
        let out = dir.appendingPathComponent("rec").path

        #expect(try await serve.request("GET", "/v1/recordings", auth: false).status == 401)
        #expect(try await serve.request("GET", "/v1/recordings", token: "not-the-token").status == 401)
        #expect(try await serve.request("POST", "/v1/recordings", json: ["room": room, "key": ["none": true], "out": out], token: "x").status == 401)

        let first = try await serve.request("POST", "/v1/recordings", json: ["room": room, "key": ["hex": key], "out": out])
        #expect(first.status == 201, "\(first.text)")
        let id = try #require(try first.json()["id"] as? String)

        func refused(_ body: Data, _ status: Int, naming field: String) async throws {
            let r = try await serve.request("POST", "/v1/recordings", body: body)
            #expect(r.status == status, "\(String(decoding: body.prefix(80), as: UTF8.self)): \(r.text)")
            #expect(((try? r.json()["error"] as? String) ?? "").contains(field), "\(r.text)")
        }
        func json(_ o: [String: Any]) throws -> Data { try JSONSerialization.data(withJSONObject: o) }
        try await refused(Data("{\"room\": 1".utf8), 400, naming: "JSON")
        try await refused(Data("[1, 2]".utf8), 400, naming: "object")
        try await refused(try json(["key": ["hex": key], "out": out]), 400, naming: "room")
        try await refused(try json(["room": "12", "key": ["hex": key], "out": out]), 400, naming: "room")
        try await refused(try json(["room": room, "key": ["hex": "abc"], "out": out]), 400, naming: "key.hex")
        try await refused(try json(["room": room, "out": out]), 400, naming: "key")
        try await refused(try json(["room": room, "key": ["none": true], "out": "/etc/sfubot-serve-test"]), 403, naming: "out")
        try await refused(try json(["room": room, "key": ["none": true], "out": String(repeating: "d", count: 1025)]), 400, naming: "out")
        try await refused(try json(["room": room, "key": ["none": true], "out": out, "durationSeconds": -1]), 400, naming: "durationSeconds")
        try await refused(try json(["room": room, "key": ["none": true], "out": out, "color": "red"]), 400, naming: "color")
        try await refused(try json(["room": room, "key": ["hex": key], "out": out]), 409, naming: id)
        try await refused(try json(["room": room + 1, "key": ["hex": key], "out": out]), 409, naming: id)
        try await refused(Data(repeating: 0x20, count: 200_000), 413, naming: "larger")
        let badPlay = try await serve.request("POST", "/v1/playbacks", json: ["room": room, "key": ["none": true], "file": "nonexistent.wav"])
        #expect(badPlay.status == 400 && badPlay.text.contains("file"), "\(badPlay.text)")

        #expect(try await serve.request("GET", "/v1/recordings/rec-nope").status == 404)
        #expect(try await serve.request("DELETE", "/v1/playbacks/\(id)").status == 404, "a recording is not a playback")

        // Still serving, the job still there.
        #expect(try await serve.request("GET", "/healthz", auth: false).status == 200)
        let job = try await serve.request("GET", "/v1/recordings/\(id)").json()
        #expect(["starting", "running"].contains(job["state"] as? String ?? ""), "\(job)")
        serve.process.signal(SIGTERM)
        #expect(await serve.process.exit(within: .seconds(30)) == 0)
    }
}
}
