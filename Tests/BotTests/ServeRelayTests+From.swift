import Bot
import FrameCrypto
import Foundation
import Testing
import TestSupport

extension MediaScene.ServeRelayTests {
    /// A relay job in (`from`, issue 43 items 4 and 6): serve reads a live source the operator
    /// allowed and publishes it into the room, sealed; sfubot's recorder, with the key, records
    /// the tone. A source not allowed is 403, `from` with `to` is 400; paused, the source is held
    /// back (the recorder opens nothing new); DELETE ends it done.
    /// ECall, and FrameCryptor (the job seals as the participant its display names: `9`).
    @Test("a relay job from an allowed RTMP source publishes it sealed: the recorder with the key records 440 Hz; not allowed is 403; paused it sends nothing; DELETE ends it done",
          arguments: ["ecall", "framecryptor"])
    func relayJobFromALiveSource(_ frameFormat: String) async throws {
        let dir = try Scene.tempDirectory("serve-relay-from-\(frameFormat)")
        let fc = frameFormat == "framecryptor"
        let recordFormat = fc ? ["--frame-format", "framecryptor", "--ratchet-salt", "PQSRTCFrameEncryptionSalt"] : []
        let jobFormat: [String: Any] = fc ? ["format": ["frame": "framecryptor", "ratchetSalt": "PQSRTCFrameEncryptionSalt"]] : [:]
        let port = try RelayServers.freePort()
        let nginx = try await RelayServers.nginxRTMP(port: port, in: dir)
        let stream = "studio-\(UUID().uuidString.prefix(8))"
        let url = "rtmp://127.0.0.1:\(port)/live/\(stream)"
        let source = try RelayFromCase.push(to: url, format: "flv")
        defer { source.signal(SIGKILL) }
        let room = try await Scene.createRoom()
        let metrics = try RelayServers.freePort(), out = dir.appendingPathComponent("rec")
        let recorder = try SfubotProcess.start(["record", "--janus", Scene.janusURL!, "--room", "\(room)", "--key-hex", RelayCase.key,
                                                "--out", out.path, "--metrics-port", "\(metrics)"] + recordFormat)
        defer { recorder.signal(SIGKILL) }
        let serve = try await ServeProcess.start(port: fc ? 18668 : 18658, in: dir, extra: ["--relay-allow", "rtmp://127.0.0.1:\(port)/live"])
        defer { serve.process.signal(SIGKILL) }

        let refused = try await serve.request("POST", "/v1/relays", json: ["room": room, "key": ["hex": RelayCase.key], "from": "rtmp://127.0.0.1:\(port)/other/\(stream)"])
        #expect(refused.status == 403 && refused.text.contains("--relay-allow") && !refused.text.contains(stream), "\(refused.status) \(refused.text)")
        let both = try await serve.request("POST", "/v1/relays", json: ["room": room, "key": ["hex": RelayCase.key], "from": url, "to": "rtmp://127.0.0.1:\(port)/live/x"])
        #expect(both.status == 400 && both.text.contains("not both"), "\(both.status) \(both.text)")

        let created = try await serve.request("POST", "/v1/relays", json: ["room": room, "key": ["hex": RelayCase.key], "from": url, "display": "9:Studio"]
                                              .merging(jobFormat) { a, _ in a })
        #expect(created.status == 201 && !created.text.contains(stream), "\(created.text)")
        let id = try #require(try created.json()["id"] as? String, "\(created.text)")
        #expect((try created.json()["from"] as? String ?? "").hasPrefix("rtmp://127.0.0.1:\(port)/live"), "\(created.text)")
        func opened() async -> Double {
            let text = await MediaScene.MetricsCLITests.scrape(metrics) ?? ""
            return PrometheusText.value("sfubot_frames_opened_total{kind=\"audio\",format=\"\(frameFormat)\"}", in: text) ?? 0
        }
        #expect(await eventually(within: 40) { await opened() >= 150 }, "the recorder opened the job's audio")

        #expect(try await serve.request("POST", "/v1/relays/\(id)/pause").status == 200)
        try await Task.sleep(for: .milliseconds(500))
        let atPause = await opened()
        try await Task.sleep(for: .seconds(2))
        let whilePaused = await opened() - atPause
        #expect(whilePaused <= 5, "\(whilePaused) frames opened while paused")
        #expect(try await serve.request("POST", "/v1/relays/\(id)/resume").status == 200)
        #expect(await eventually(within: 15) { await opened() >= atPause + whilePaused + 100 }, "frames again after resume")

        let final = try await serve.request("DELETE", "/v1/relays/\(id)").json()
        #expect(final["state"] as? String == "done", "\(final)")
        #expect(!(try await serve.request("GET", "/v1/relays").text).contains(stream), "the stream name is a secret")
        recorder.signal(SIGTERM)
        _ = await recorder.finished()
        await nginx.stop()
        let manifest = try RecordingManifest.read(from: out)
        let audio = try #require(manifest.feeds.first { $0.kind == "audio" }, "\(manifest.feeds)")
        #expect(manifest.participants.count == 1 && audio.frames.opened == audio.frames.received, "\(manifest.feeds.map(\.frames))")
        let samples = try await RelayCase.audioSamples(out.appendingPathComponent(audio.file))
        let f = try #require(Audio.dominantFrequency(Array(samples.prefix(3 * 48000))))
        #expect(abs(f - 440) <= 9, "recorded \(f) Hz")
        print("serve relay from: \(audio.frames.opened) audio frames recorded at \(f) Hz, \(whilePaused) opened while paused")
    }
}
