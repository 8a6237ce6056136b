import Foundation
import Testing
import TestSupport

/// `sfubot serve` stopping and starting again: SIGTERM with jobs running finishes every file;
/// a crash (SIGKILL) and a new start with the same --state-dir take the running jobs up again.
extension MediaScene {
@Suite struct ServeLifecycleTests {
    let key = String(repeating: "c3", count: 32)

    @Test("SIGTERM with 20 jobs running: every recording finished, exit 0")
    func sigtermFinishesEveryJob() async throws {
        let dir = try Scene.tempDirectory("serve-sigterm")
        let tone = try await Audio.tone(330, seconds: 2, in: dir)
        let serve = try await ServeProcess.start(port: 18483, in: dir)
        defer { serve.process.signal(SIGKILL) }
        var recordings: [(String, URL)] = []
        for i in 0..<10 {
            let room = try await Scene.createRoom()
            let out = dir.appendingPathComponent("rec\(i)")
            let rec = try await serve.request("POST", "/v1/recordings", json: ["room": room, "key": ["hex": key], "out": out.path])
            #expect(rec.status == 201, "\(rec.text)")
            recordings.append((try #require(try rec.json()["id"] as? String), out))
            let play = try await serve.request("POST", "/v1/playbacks", json: ["room": room, "key": ["hex": key], "file": tone.path, "loop": true])
            #expect(play.status == 201, "\(play.text)")
        }
        // Until every recording has two seconds of the tone.
        for (id, _) in recordings {
            let s = try await serve.waitFor("/v1/recordings/\(id)", within: .seconds(60)) { s in
                ((s["feeds"] as? [[String: Any]]) ?? []).contains { ($0["framesOpened"] as? Int ?? 0) > 100 }
            }
            #expect(s["state"] as? String == "running", "\(s)")
        }
        let jobs = try await serve.metric("sfubot_jobs", matching: "state=\"running\"")
        #expect(jobs == 20)
        let signalled = ContinuousClock.now
        serve.process.signal(SIGTERM)
        let status = await serve.process.exit(within: .seconds(60))
        let took = ContinuousClock.now - signalled
        print("serve: SIGTERM with 20 jobs running (10 recordings, 10 playbacks) → exit \(status.map(String.init) ?? "none") after \(took)")
        #expect(status == 0)
        for (_, out) in recordings {
            let manifest = try JSONSerialization.jsonObject(with: Data(contentsOf: out.appendingPathComponent("manifest.json"))) as! [String: Any]
            #expect(manifest["ended"] != nil, "\(out.lastPathComponent): manifest final")
            let feed = try #require((manifest["feeds"] as? [[String: Any]])?.first)
            let samples = try await Audio.decode(out.appendingPathComponent(feed["file"] as! String))
            #expect(Audio.dominantFrequency(samples).map { abs($0 - 330) < 10 } == true)
        }
    }

    @Test("killed and started again with its --state-dir: the recording and the playback resume, a gap in the manifest")
    func restartResumesRunningJobs() async throws {
        let room = try await Scene.createRoom()
        let dir = try Scene.tempDirectory("serve-restart")
        let tone = try await Audio.tone(550, seconds: 3, in: dir)
        let out = dir.appendingPathComponent("rec")
        var serve = try await ServeProcess.start(port: 18484, in: dir)
        let rec = try await serve.request("POST", "/v1/recordings", json: ["room": room, "key": ["hex": key], "out": out.path])
        let recID = try #require(try rec.json()["id"] as? String)
        let play = try await serve.request("POST", "/v1/playbacks", json: ["room": room, "key": ["hex": key], "file": tone.path, "loop": true, "display": "9:Loop"])
        let playID = try #require(try play.json()["id"] as? String)
        _ = try await serve.waitFor("/v1/recordings/\(recID)") { s in
            ((s["feeds"] as? [[String: Any]]) ?? []).contains { ($0["framesOpened"] as? Int ?? 0) > 150 }
        }
        serve.process.signal(SIGKILL)
        _ = await serve.process.exit(within: .seconds(10))

        serve = try await ServeProcess.start(port: 18484, in: dir, stateDir: serve.stateDir, token: serve.token)
        defer { serve.process.signal(SIGKILL) }
        let resumed = try await serve.waitFor("/v1/recordings/\(recID)", within: .seconds(60)) { s in
            ((s["feeds"] as? [[String: Any]]) ?? []).contains { ($0["live"] as? Bool == true) && ($0["framesOpened"] as? Int ?? 0) > 100 }
        }
        #expect(resumed["state"] as? String == "running", "\(resumed)")
        #expect(resumed["resumes"] as? Int == 1)
        let player = try await serve.request("GET", "/v1/playbacks/\(playID)").json()
        #expect(player["resumes"] as? Int == 1 && player["state"] as? String == "running", "\(player)")

        let final = try await serve.request("DELETE", "/v1/recordings/\(recID)").json()
        #expect(final["state"] as? String == "done")
        let manifest = try JSONSerialization.jsonObject(with: Data(contentsOf: out.appendingPathComponent("manifest.json"))) as! [String: Any]
        let gaps = try #require(manifest["gaps"] as? [[String: Any]])
        #expect(gaps.contains { ($0["cause"] as? String ?? "").contains("not running") && $0["end"] != nil }, "\(gaps)")
        // The player's audio in two segments (before and after), each the tone.
        let files = ((manifest["feeds"] as? [[String: Any]]) ?? []).filter { ($0["display"] as? String) == "9:Loop" }.compactMap { $0["file"] as? String }
        #expect(files.count == 2, "\(files): \(manifest)")
        for file in files {
            let samples = try await Audio.decode(out.appendingPathComponent(file))
            #expect(Audio.dominantFrequency(samples).map { abs($0 - 550) < 10 } == true, "\(file)")
        }
        serve.process.signal(SIGTERM)
        #expect(await serve.process.exit(within: .seconds(30)) == 0)
    }
}
}
