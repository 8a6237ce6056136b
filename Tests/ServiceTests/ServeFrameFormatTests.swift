import Bot
import FrameCrypto
import Foundation
import Testing
import TestSupport

/// serve jobs in the formats whose frames name their key (issue 37), against the real Janus:
/// a FrameCryptor recording whose publisher's key is handed in by `POST …/keys` while the job
/// runs, beside a publisher whose key never comes; the key never shown, logged or stored.
extension MediaScene {
@Suite struct ServeFrameFormatTests {
    static let salt = "PQSRTCFrameEncryptionSalt"

    @Test("a framecryptor recording opens a publisher whose key came by POST …/keys, counts missing_key for one whose key never came, and never shows, logs or stores the key")
    func keysHandedInWhileTheJobRuns() async throws {
        let room = try await Scene.createRoom()
        let dir = try Scene.tempDirectory("serve-fc")
        let tone = try await Audio.tone(440, seconds: 6, in: dir)
        let material = try KeyMaterial((0..<32).map { _ in UInt8.random(in: 0...255) })
        let hex = material.bytes.map { String(format: "%02x", $0) }.joined()
        let serve = try await ServeProcess.start(port: 18561, in: dir, extra: ["-vv"])
        defer { serve.process.signal(SIGKILL) }

        let out = dir.appendingPathComponent("rec")
        let format: [String: Any] = ["frame": "framecryptor", "ratchetSalt": Self.salt, "magicBytes": "PQSRTCMagicBytes", "keyWaitSeconds": 1]
        let rec = try await serve.request("POST", "/v1/recordings", json: ["room": room, "out": out.path, "format": format])
        #expect(rec.status == 201, "\(rec.text)")
        let id = try #require(try rec.json()["id"] as? String)
        #expect(try rec.json()["frameFormat"] as? String == "framecryptor" && rec.json()["e2ee"] as? Bool == true, "\(rec.text)")
        let running = try await serve.waitFor("/v1/recordings/\(id)") { $0["state"] as? String == "running" }
        #expect(running["state"] as? String == "running", "\(running)")

        // Refusals first: none of them touches the job.
        let keys = "/v1/recordings/\(id)/keys"
        let malformed = try await serve.request("POST", keys, body: Data(#"{"participant": "5", "index": 0, "key": "abc"}"#.utf8))
        let why = try malformed.json()["error"] as? String ?? ""
        #expect(malformed.status == 400 && why.hasPrefix("\"key\" is key material"), "\(malformed.text)")
        #expect(try await serve.request("POST", keys, json: ["index": 0, "key": hex], auth: false).status == 401)
        #expect(try await serve.request("POST", "/v1/recordings/rec-nope/keys", json: ["index": 0, "key": hex]).status == 404)
        #expect(try await serve.request("POST", "/v1/playbacks/\(id)/keys", json: ["index": 0, "key": hex]).status == 404, "a recording is not a playback")
        let noRatchet = try await serve.request("POST", keys, json: ["participant": "5", "index": 0, "ratchet": true])
        #expect(noRatchet.status == 409, "no key to ratchet yet: \(noRatchet.text)")

        // Publisher 5's key, handed in while the job runs; 6's never comes.
        let handed = try await serve.request("POST", keys, json: ["participant": "5", "index": 0, "key": hex])
        #expect(handed.status == 204 && handed.body.isEmpty, "\(handed.status) \(handed.text)")
        func publisher(_ id: String) throws -> Player {
            let store = FrameKeyStore(format: FrameCryptorFormat(options: .pqsrtc))
            try store.set(participant: id, index: 0, material: material)
            return Player(config: try Scene.config(room: room, display: "\(id):Pub \(id)", protection: .indexed(IndexedProtection(store: store, sender: id))),
                          file: tone.path)
        }
        let five = try publisher("5"), six = try publisher("6")
        let played = [Task { try await five.run() }, Task { try await six.run() }]
        for p in played { _ = try await p.value }

        let seen = try await serve.waitFor("/v1/recordings/\(id)", within: .seconds(10)) { s in
            let feeds = (s["feeds"] as? [[String: Any]]) ?? []
            return feeds.contains { ($0["display"] as? String)?.hasPrefix("6:") == true && (($0["dropped"] as? [String: Int])?["missing_key"] ?? 0) > 100 }
        }
        let feeds = try #require(seen["feeds"] as? [[String: Any]])
        let f5 = try #require(feeds.first { ($0["display"] as? String)?.hasPrefix("5:") == true }, "\(feeds)")
        let f6 = try #require(feeds.first { ($0["display"] as? String)?.hasPrefix("6:") == true }, "\(feeds)")
        print("serve framecryptor: 5 \(f5["framesReceived"] ?? 0)/\(f5["framesOpened"] ?? 0) dropped \(f5["dropped"] ?? [:]); 6 \(f6["dropped"] ?? [:])")
        #expect((f5["framesOpened"] as? Int ?? 0) > 250 && f5["framesDropped"] as? Int == 0, "\(f5)")
        #expect(f6["framesOpened"] as? Int == 0 && (f6["dropped"] as? [String: Int])?["missing_key"] == f6["framesReceived"] as? Int, "\(f6)")
        let listed = try await serve.request("GET", "/v1/recordings")
        #expect(!seen.description.contains(hex) && !listed.text.contains(hex), "GET never shows a key")

        let stopped = try await serve.request("DELETE", "/v1/recordings/\(id)")
        let final = try stopped.json()
        #expect(stopped.status == 200 && !stopped.text.contains(hex))
        #expect(final["state"] as? String == "done", "\(stopped.text)")
        let late = try await serve.request("POST", keys, json: ["participant": "6", "index": 0, "key": hex])
        #expect(late.status == 409 && late.text.contains("ended"), "\(late.text)")

        // The recording: 5's tone, decrypted; 6 unrecorded for want of its key; the format named.
        let manifest = try JSONSerialization.jsonObject(with: Data(contentsOf: out.appendingPathComponent("manifest.json"))) as? [String: Any] ?? [:]
        #expect(manifest["frame_format"] as? String == "framecryptor", "\(manifest.keys.sorted())")
        let files = try #require(final["files"] as? [String])
        let opus = try #require(files.first { $0.hasSuffix(".opus") && FileManager.default.fileExists(atPath: $0) }, "\(files)")
        let samples = try await Audio.decode(URL(fileURLWithPath: opus))
        #expect(Double(samples.count) / 48000 >= 4, "\(Double(samples.count) / 48000) s")
        #expect(Audio.dominantFrequency(samples).map { abs($0 - 440) < 10 } == true)
        let unrecorded = manifest["unrecorded"] as? [[String: Any]] ?? []
        #expect(unrecorded.count == 1 && "\(unrecorded)".contains("missing_key"), "\(unrecorded)")

        serve.process.signal(SIGTERM)
        #expect(await serve.process.exit(within: .seconds(30)) == 0)
        let output = await serve.process.finished()
        #expect(output.errText.contains("key 0 of participant 5 set"), "the key's arrival is logged, without it")
        #expect(!output.outText.contains(hex) && !output.errText.contains(hex), "the log never holds the key")
        // Nor does anything the service wrote: its state folder and the recording's folder.
        for folder in [serve.stateDir, out] {
            for case let file as URL in FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil)?.allObjects ?? [] {
                guard let data = try? Data(contentsOf: file) else { continue }
                #expect(!String(decoding: data, as: UTF8.self).contains(hex), "\(file.path) holds the key")
            }
        }
    }

    @Test("a framecryptor playback seals with its request's key at index 1; a recording given that key in its request opens every frame, one with another salt opens none and says why")
    func playbackAndRecordingKeysInTheRequest() async throws {
        let room = try await Scene.createRoom()
        let dir = try Scene.tempDirectory("serve-fc-play")
        let tone = try await Audio.tone(660, seconds: 3, in: dir)
        let hex = (0..<24).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        let serve = try await ServeProcess.start(port: 18562, in: dir)
        defer { serve.process.signal(SIGKILL) }
        func format(_ salt: String) -> [String: Any] { ["frame": "framecryptor", "ratchetSalt": salt, "keyIndex": 1] }
        let keys: [[String: Any]] = [["participant": "7", "index": 1, "key": hex]]
        var recordings: [(id: String, out: URL)] = []
        for (name, salt) in [("right", Self.salt), ("wrong", "another salt")] {
            let out = dir.appendingPathComponent(name)
            let rec = try await serve.request("POST", "/v1/recordings", json: ["room": room, "out": out.path, "format": format(salt), "keys": keys])
            #expect(rec.status == 201 && !rec.text.contains(hex), "\(rec.text)")
            recordings.append((try #require(try rec.json()["id"] as? String), out))
        }
        for r in recordings { _ = try await serve.waitFor("/v1/recordings/\(r.id)") { $0["state"] as? String == "running" } }
        let play = try await serve.request("POST", "/v1/playbacks", json: [
            "room": room, "file": tone.path, "loop": true, "display": "7:Tone", "format": format(Self.salt), "keys": keys,
        ])
        #expect(play.status == 201 && !play.text.contains(hex), "\(play.text)")
        let playID = try #require(try play.json()["id"] as? String)

        let right = try await serve.waitFor("/v1/recordings/\(recordings[0].id)") { s in
            ((s["feeds"] as? [[String: Any]]) ?? []).contains { ($0["framesOpened"] as? Int ?? 0) > 200 }
        }
        let wrong = try await serve.waitFor("/v1/recordings/\(recordings[1].id)") { s in
            ((s["feeds"] as? [[String: Any]]) ?? []).contains { ($0["framesReceived"] as? Int ?? 0) > 200 }
        }
        let playing = try await serve.request("GET", "/v1/playbacks/\(playID)").json()
        #expect(((playing["frames"] as? [String: Any])?["audioSealed"] as? Int ?? 0) > 200 && playing["frameFormat"] as? String == "framecryptor", "\(playing)")
        let good = try #require((right["feeds"] as? [[String: Any]])?.first { $0["kind"] as? String == "audio" }, "\(right)")
        let bad = try #require((wrong["feeds"] as? [[String: Any]])?.first { $0["kind"] as? String == "audio" }, "\(wrong)")
        print("serve framecryptor playback: right salt \(good["framesOpened"] ?? 0)/\(good["framesReceived"] ?? 0), wrong salt dropped \(bad["dropped"] ?? [:])")
        #expect(good["framesDropped"] as? Int == 0, "\(good)")
        #expect(bad["framesOpened"] as? Int == 0 && (bad["dropped"] as? [String: Int])?["no_key_opens"] == bad["framesReceived"] as? Int, "\(bad)")

        #expect(try await serve.request("DELETE", "/v1/playbacks/\(playID)").status == 200)
        for r in recordings { #expect(try await serve.request("DELETE", "/v1/recordings/\(r.id)").status == 200) }
        let manifest = try JSONSerialization.jsonObject(with: Data(contentsOf: recordings[0].out.appendingPathComponent("manifest.json"))) as? [String: Any] ?? [:]
        let feed = try #require((manifest["feeds"] as? [[String: Any]])?.first, "\(manifest)")
        #expect(manifest["frame_format"] as? String == "framecryptor", "\(manifest.keys.sorted())")
        #expect((feed["opened_by_key_index"] as? [String: Int]).map { Array($0.keys) } == ["1"], "sealed at format.keyIndex 1: \(feed)")
        let samples = try await Audio.decode(recordings[0].out.appendingPathComponent(try #require(feed["file"] as? String)))
        #expect(Audio.dominantFrequency(samples).map { abs($0 - 660) < 13 } == true)
        serve.process.signal(SIGTERM)
        #expect(await serve.process.exit(within: .seconds(30)) == 0)
    }

    @Test("a framecryptor job taken up again after a crash has its request's keys and not the ones handed in: the state folder never held those")
    func resumedJobHasOnlyItsRequestsKeys() async throws {
        let room = try await Scene.createRoom()
        let dir = try Scene.tempDirectory("serve-fc-resume")
        let requested = String(repeating: "1e", count: 20), handed = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        var serve = try await ServeProcess.start(port: 18565, in: dir)
        defer { serve.process.signal(SIGKILL) }
        let rec = try await serve.request("POST", "/v1/recordings", json: [
            "room": room, "out": dir.appendingPathComponent("rec").path, "format": ["frame": "framecryptor", "ratchetSalt": Self.salt],
            "keys": [["participant": "1", "index": 0, "key": requested]],
        ])
        let id = try #require(try rec.json()["id"] as? String, "\(rec.text)")
        _ = try await serve.waitFor("/v1/recordings/\(id)") { $0["state"] as? String == "running" }
        #expect(try await serve.request("POST", "/v1/recordings/\(id)/keys", json: ["participant": "2", "index": 0, "key": handed]).status == 204)
        // A ratchet needs the key to be held: a probe of what the job's store holds, no media needed.
        #expect(try await serve.request("POST", "/v1/recordings/\(id)/keys", json: ["participant": "2", "index": 0, "ratchet": true]).status == 204)
        let saved = try String(contentsOf: serve.stateDir.appendingPathComponent("jobs/\(id).json"), encoding: .utf8)
        #expect(saved.contains(requested) && !saved.contains(handed), "the request's keys are kept with the job, the handed-in one is not")

        serve.process.signal(SIGKILL)
        _ = await serve.process.exit(within: .seconds(10))
        serve = try await ServeProcess.start(port: 18565, in: dir, stateDir: serve.stateDir, token: serve.token)
        let resumed = try await serve.waitFor("/v1/recordings/\(id)") { $0["state"] as? String == "running" && $0["resumes"] as? Int == 1 }
        #expect(resumed["frameFormat"] as? String == "framecryptor", "\(resumed)")
        let lost = try await serve.request("POST", "/v1/recordings/\(id)/keys", json: ["participant": "2", "index": 0, "ratchet": true])
        #expect(lost.status == 409 && lost.text.contains("holds no key of participant 2"), "\(lost.text)")
        #expect(try await serve.request("POST", "/v1/recordings/\(id)/keys", json: ["participant": "1", "index": 0, "ratchet": true]).status == 204)
        #expect(try await serve.request("POST", "/v1/recordings/\(id)/keys", json: ["participant": "2", "index": 0, "key": handed]).status == 204)
        #expect(try await serve.request("DELETE", "/v1/recordings/\(id)").status == 200)
        serve.process.signal(SIGTERM)
        #expect(await serve.process.exit(within: .seconds(30)) == 0)
    }
}
}
