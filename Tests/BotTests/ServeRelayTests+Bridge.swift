import Bot
import FrameCrypto
import Foundation
import Testing
import TestSupport

extension MediaScene.ServeRelayTests {
    /// A relay job into another room (`toRoom`, issue 43 items 5 and 6): Ann publishes into ECall
    /// room A; the job bridges her into room B sealed in FrameCryptor's format with B's key; a
    /// recorder in B with that key records her tone under her own display, one with A's key
    /// opens nothing. A Janus the operator did not allow is 403, a key of none for an encrypted
    /// call 400; paused 4 s, room B's recording is silent for as long and the tone comes back
    /// in the same publisher; DELETE ends it done.
    @Test("a relay job into another room: Ann's tone recorded in room B under her display with B's key only; a Janus not allowed is 403, no key 400, a pause is silence in B, DELETE done")
    func relayJobIntoAnotherRoom() async throws {
        let dir = try Scene.tempDirectory("serve-relay-bridge")
        let source = try await RelayCase.source(in: dir)
        let (roomA, roomB) = (try await Scene.createRoom(), try await Scene.createRoom())
        let keyB = String(repeating: "3c", count: 32)
        let fc = ["--frame-format", "framecryptor", "--ratchet-salt", "PQSRTCFrameEncryptionSalt"]
        let (good, wrong) = (dir.appendingPathComponent("b"), dir.appendingPathComponent("b-with-a-key"))
        let recorder = try SfubotProcess.start(["record", "--janus", Scene.janusURL!, "--room", "\(roomB)", "--key-hex", keyB, "--out", good.path] + fc)
        defer { recorder.signal(SIGKILL) }
        let wrongRecorder = try SfubotProcess.start(["record", "--janus", Scene.janusURL!, "--room", "\(roomB)", "--key-hex", RelayCase.key,
                                                     "--out", wrong.path] + fc)
        defer { wrongRecorder.signal(SIGKILL) }
        let publisher = try RelayCase.publisher(source, room: roomA)
        defer { publisher.signal(SIGKILL) }
        let serve = try await ServeProcess.start(port: 18659, in: dir)
        defer { serve.process.signal(SIGKILL) }
        let format: [String: Any] = ["frame": "framecryptor", "ratchetSalt": "PQSRTCFrameEncryptionSalt"]

        let elsewhere = try await serve.request("POST", "/v1/relays", json: ["room": roomA, "key": ["hex": RelayCase.key],
                                                                             "toRoom": ["room": roomB, "key": ["hex": keyB], "janus": "ws://127.0.0.1:1/"]])
        #expect(elsewhere.status == 403 && elsewhere.text.contains("--janus-allow"), "\(elsewhere.status) \(elsewhere.text)")
        let plain = try await serve.request("POST", "/v1/relays", json: ["room": roomA, "key": ["hex": RelayCase.key], "toRoom": ["room": roomB, "key": ["none": true]]])
        #expect(plain.status == 400 && plain.text.contains("toRoom.key"), "\(plain.status) \(plain.text)")

        let created = try await serve.request("POST", "/v1/relays", json: ["room": roomA, "key": ["hex": RelayCase.key], "participant": "7",
                                                                           "toRoom": ["room": roomB, "key": ["hex": keyB], "format": format]])
        #expect(created.status == 201 && !created.text.contains(keyB), "\(created.text)")
        let id = try #require(try created.json()["id"] as? String, "\(created.text)")
        let sending = try await serve.waitFor("/v1/relays/\(id)", within: .seconds(30)) { $0["relayPhase"] as? String == "sending" }
        #expect(sending["toRoom"] as? Int64 == roomB || sending["toRoom"] as? Int == Int(roomB), "\(sending)")
        // Paused once room B's recorder records her (a loaded machine subscribes late: the lanes
        // once recorded only what came after the pause, with no silence in it).
        #expect(await eventually(within: 30) { mediaOnDisk(in: good, bytes: 8 * 1024) }, "room B's recorder records nothing")
        try await Task.sleep(for: .seconds(2))
        let paused = try await serve.request("POST", "/v1/relays/\(id)/pause")
        #expect(paused.status == 200 && (try? paused.json()["paused"] as? Bool) == true, "\(paused.text)")
        try await Task.sleep(for: .seconds(4))
        let resumed = try await serve.request("POST", "/v1/relays/\(id)/resume")
        #expect(resumed.status == 200 && (try? resumed.json()["paused"] as? Bool) == false, "\(resumed.text)")
        try await Task.sleep(for: .seconds(5))
        let final = try await serve.request("DELETE", "/v1/relays/\(id)").json()
        #expect(final["state"] as? String == "done", "\(final)")
        for r in [recorder, wrongRecorder] { r.signal(SIGTERM) }
        _ = await recorder.finished()
        let w = await wrongRecorder.finished()

        let manifest = try RecordingManifest.read(from: good)
        let audio = try #require(manifest.feeds.first { $0.kind == "audio" }, "\(manifest.feeds)")
        #expect(manifest.participants.count == 1 && audio.display.hasPrefix("7:") && audio.frames.opened > 200 && audio.frames.droppedTotal == 0,
                "\(manifest.feeds.map { ($0.display, $0.frames) })")
        let samples = try await RelayCase.audioSamples(good.appendingPathComponent(audio.file))
        let f = try #require(Audio.dominantFrequency(Array(samples.prefix(3 * 48000))))
        #expect(abs(f - 440) <= 9, "room B recorded \(f) Hz")
        // The pause, on the recording's own timeline: about 4 s without the tone, the tone after.
        let timed = try await Audio.decodeTimed(good.appendingPathComponent(audio.file))
        let quiet = Audio.quietWindows(timed)
        #expect(quiet.count >= 30 && quiet.count <= 60, "100 ms windows without the tone: \(quiet.count) at \(quiet.first ?? -1)…\(quiet.last ?? -1) s")
        #expect(Audio.dominantFrequency(Array(timed.suffix(2 * 48000))).map { abs($0 - 440) <= 9 } == true, "the tone after the resume")
        let total = w.outText.split(whereSeparator: \.isNewline).last { $0.hasPrefix("frames received: ") } ?? ""
        #expect(total.contains("opened: 0,") && !total.hasPrefix("frames received: 0,"), "room A's key in room B: \(w.outText)")
        print("serve relay into another room: \(audio.frames.opened) audio frames at \(f) Hz in room B as '\(audio.display)', "
              + "paused 4 s: \(quiet.count) windows of 100 ms silent there; with A's key: \(total)")
    }
}

extension MediaScene.ServeRelayTests {
    /// The bridge into an SFrame room (RFC 9605; audio: SFrame seals whole frames, which
    /// libwebrtc's H.264 packetizer cannot send): a recorder there with the SFrame key records
    /// the tone, everyone bridged (no `participant`).
    @Test("a relay job into an SFrame room, everyone: the tone recorded there with the SFrame key")
    func relayJobIntoAnSFrameRoom() async throws {
        let dir = try Scene.tempDirectory("serve-relay-bridge-sframe")
        let tone = try await Audio.tone(440, seconds: 30, in: dir)
        let (roomA, roomB) = (try await Scene.createRoom(), try await Scene.createRoom())
        let material = String(repeating: "5d", count: 16)
        let out = dir.appendingPathComponent("b")
        let recorder = try SfubotProcess.start(["record", "--janus", Scene.janusURL!, "--room", "\(roomB)", "--frame-format", "sframe",
                                                "--key-hex", material, "--out", out.path])
        defer { recorder.signal(SIGKILL) }
        let publisher = try SfubotProcess.start(["play", tone.path, "--janus", Scene.janusURL!, "--room", "\(roomA)", "--key-hex", RelayCase.key,
                                                 "--display", "7:Ann"])
        defer { publisher.signal(SIGKILL) }
        let serve = try await ServeProcess.start(port: 18660, in: dir)
        defer { serve.process.signal(SIGKILL) }
        let created = try await serve.request("POST", "/v1/relays", json: ["room": roomA, "key": ["hex": RelayCase.key],
                                                                           "toRoom": ["room": roomB, "key": ["hex": material], "format": ["frame": "sframe"]]])
        let id = try #require(try created.json()["id"] as? String, "\(created.text)")
        _ = try await serve.waitFor("/v1/relays/\(id)", within: .seconds(30)) { $0["relayPhase"] as? String == "sending" }
        try await Task.sleep(for: .seconds(8))
        let final = try await serve.request("DELETE", "/v1/relays/\(id)").json()
        #expect(final["state"] as? String == "done", "\(final)")
        recorder.signal(SIGTERM)
        let ran = await recorder.finished()
        #expect(ran.status == 0, "recorder exited \(ran.status): \(ran.errText.suffix(1500))")
        let manifest = try RecordingManifest.read(from: out)
        let audio = try #require(manifest.feeds.first { $0.kind == "audio" }, "\(manifest.feeds)")
        #expect(audio.display == "7:Ann" && audio.frames.opened > 150 && audio.frames.droppedTotal == 0, "\(audio.display) \(audio.frames)")
        let samples = try await Audio.decode(out.appendingPathComponent(audio.file))
        #expect(abs((Audio.dominantFrequency(samples) ?? 0) - 440) <= 9, "the tone in the SFrame room")
    }
}
