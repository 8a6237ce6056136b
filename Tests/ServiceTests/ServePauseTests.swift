import Foundation
import Testing
import TestSupport

/// Issue 27, part 5, through the API: `POST …/{id}/pause` and `/resume` for recordings and
/// playbacks; a paused job stays paused through a crash and a new start with its --state-dir.
extension MediaScene {
@Suite struct ServePauseTests {
    let key = String(repeating: "c5", count: 32)

    @Test("pause, crash, start again, resume: the recording stays paused across the restart, the manifest has the pause, nothing written meanwhile")
    func pauseSurvivesARestart() async throws {
        let room = try await Scene.createRoom()
        let dir = try Scene.tempDirectory("serve-pause")
        let tone = try await Audio.tone(660, seconds: 4, in: dir)
        let out = dir.appendingPathComponent("rec")
        var serve = try await ServeProcess.start(port: 18541, in: dir)
        let rec = try await serve.request("POST", "/v1/recordings", json: ["room": room, "key": ["hex": key], "out": out.path])
        let recID = try #require(try rec.json()["id"] as? String)
        let play = try await serve.request("POST", "/v1/playbacks", json: ["room": room, "key": ["hex": key], "file": tone.path, "loop": true, "display": "7:Loop"])
        let playID = try #require(try play.json()["id"] as? String)
        _ = try await serve.waitFor("/v1/recordings/\(recID)") { s in
            ((s["feeds"] as? [[String: Any]]) ?? []).contains { ($0["framesOpened"] as? Int ?? 0) > 100 }
        }
        let paused = try await serve.request("POST", "/v1/recordings/\(recID)/pause")
        let pausedNow = try paused.json()["paused"] as? Bool
        #expect(paused.status == 200 && pausedNow == true, "\(paused.text)")
        // A playback pauses too: nothing sealed while it is.
        let playPaused = try await serve.request("POST", "/v1/playbacks/\(playID)/pause").json()
        let sealedAtPause = (playPaused["frames"] as? [String: Any])?["audioSealed"] as? Int ?? -1
        try await Task.sleep(for: .seconds(1.5))
        let playLater = try await serve.request("GET", "/v1/playbacks/\(playID)").json()
        let sealedLater = (playLater["frames"] as? [String: Any])?["audioSealed"] as? Int ?? -1
        let sealedWhilePaused: Int = sealedLater - sealedAtPause
        #expect(playLater["paused"] as? Bool == true, "\(playLater)")
        #expect(sealedAtPause >= 0 && sealedWhilePaused <= 5, "sealed \(sealedAtPause) → \(sealedLater) while paused")
        let playResumed = try await serve.request("POST", "/v1/playbacks/\(playID)/resume").json()
        #expect(playResumed["paused"] as? Bool == false)

        // Killed while the recording is paused; the new process takes it up paused.
        serve.process.signal(SIGKILL)
        _ = await serve.process.exit(within: .seconds(10))
        serve = try await ServeProcess.start(port: 18541, in: dir, stateDir: serve.stateDir, token: serve.token)
        defer { serve.process.signal(SIGKILL) }
        let taken = try await serve.waitFor("/v1/recordings/\(recID)", within: .seconds(60)) { s in
            ((s["feeds"] as? [[String: Any]]) ?? []).contains { ($0["live"] as? Bool == true) && ($0["framesOpened"] as? Int ?? 0) > 50 }
        }
        #expect(taken["paused"] as? Bool == true && taken["resumes"] as? Int == 1, "\(taken)")
        let resumed = try await serve.request("POST", "/v1/recordings/\(recID)/resume")
        let resumedNow = try resumed.json()["paused"] as? Bool
        #expect(resumed.status == 200 && resumedNow == false, "\(resumed.text)")
        try await Task.sleep(for: .seconds(3))
        let final = try await serve.request("DELETE", "/v1/recordings/\(recID)").json()
        #expect(final["state"] as? String == "done", "\(final)")
        let late = try await serve.request("POST", "/v1/recordings/\(recID)/pause")
        #expect(late.status == 409, "an ended job: \(late.status) \(late.text)")

        let manifest = try JSONSerialization.jsonObject(with: Data(contentsOf: out.appendingPathComponent("manifest.json"))) as! [String: Any]
        let pauses = (manifest["pauses"] as? [[String: Any]]) ?? []
        #expect(pauses.count == 1 && pauses[0]["end"] != nil, "one pause, across the restart, closed by the resume: \(pauses)")
        let feeds = ((manifest["feeds"] as? [[String: Any]]) ?? []).filter { ($0["user_id"] as? String) == "7" }
        let dropped = feeds.reduce(0) { $0 + ($1["paused_frames"] as? Int ?? 0) }
        #expect(dropped >= 50, "frames opened and dropped while paused: \(dropped)")
        // Every segment holds what was read back from it (the killed process's counts are those of
        // its last manifest), and the one after the resume holds what was written after it.
        for feed in feeds {
            let samples = try await Audio.decode(out.appendingPathComponent(feed["file"] as! String))
            let onDisk = (feed["on_disk"] as? [String: Any])?["frames"] as? Int ?? 0
            let decodedSeconds: Double = Double(samples.count) / 48000, diskSeconds: Double = Double(onDisk) * 0.02
            #expect(onDisk > 0 && abs(decodedSeconds - diskSeconds) < 0.1, "decoded \(decodedSeconds) s, \(onDisk) frames on disk")
            let frequency = Audio.dominantFrequency(samples) ?? 0
            #expect(samples.count < 48000 || abs(frequency - 660) < 10, "\(frequency) Hz")
        }
        let after = try #require(feeds.last)
        #expect((after["written"] as? Int ?? 0) >= 100, "after the resume: \(after["written"] ?? 0) frames written")
    }
}
}
