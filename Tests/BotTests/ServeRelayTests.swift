import Foundation
import Testing
import TestSupport

extension MediaScene {
    /// Relay jobs (`POST /v1/relays`, issue 43 item 6): serve relays one participant of an E2EE
    /// room to a destination its operator allowed, and to nothing else; the stream is read back
    /// from a real nginx-rtmp started here.
    @Suite(.enabled(if: RelayServers.missing == nil, "\(RelayServers.missing ?? "")")) struct ServeRelayTests {
        @Test("a relay job to an allowed RTMP server carries the publisher's H.264 and the tone; the stream name never shows; DELETE ends it done; a destination not allowed is 403; paused, it sends nothing, resumed, it sends again")
        func relayJobToAnAllowedServer() async throws {
            let dir = try Scene.tempDirectory("serve-relay")
            let source = try await RelayCase.source(in: dir)
            let port = try RelayServers.freePort()
            let nginx = try await RelayServers.nginxRTMP(port: port, in: dir)
            defer { Task { await nginx.stop() } }
            let room = try await Scene.createRoom()
            let publisher = try RelayCase.publisher(source, room: room)
            defer { publisher.signal(SIGKILL) }
            let serve = try await ServeProcess.start(port: 18653, in: dir, extra: ["--relay-allow", "rtmp://127.0.0.1:\(port)/live"])
            defer { serve.process.signal(SIGKILL) }
            let secretStream = "call-\(UUID().uuidString.prefix(8))"

            // Not allowed: another application on the same server, another port, another scheme.
            for to in ["rtmp://127.0.0.1:\(port)/other/\(secretStream)", "rtmp://127.0.0.1:\(port + 1)/live/x", "srt://127.0.0.1:\(port)"] {
                let refused = try await serve.request("POST", "/v1/relays", json: ["room": room, "key": ["hex": RelayCase.key], "participant": "7", "to": to])
                #expect(refused.status == 403 && refused.text.contains("--relay-allow") && !refused.text.contains(secretStream), "\(to): \(refused.status) \(refused.text)")
            }

            let to = "rtmp://127.0.0.1:\(port)/live/\(secretStream)"
            let created = try await serve.request("POST", "/v1/relays", json: ["room": room, "key": ["hex": RelayCase.key], "participant": "7", "to": to])
            #expect(created.status == 201, "\(created.text)")
            let id = try #require(try created.json()["id"] as? String)
            #expect(id.hasPrefix("relay-") && !created.text.contains(secretStream), "\(created.text)")
            let sending = try await serve.waitFor("/v1/relays/\(id)", within: .seconds(40)) { $0["relayPhase"] as? String == "sending" }
            #expect(sending["participant"] as? String == "7" && sending["kind"] as? String == "relay", "\(sending)")
            #expect((sending["to"] as? String ?? "").hasPrefix("rtmp://127.0.0.1:\(port)/live"), "\(sending)")

            let got = dir.appendingPathComponent("got.flv")
            let read = await RelayCase.readBack(to, seconds: 6, to: got)
            #expect(read, "nothing came back from nginx")
            let streams = try await RelayCase.probe(got)
            #expect(streams.video?.codec == "h264" && streams.audio?.codec == "aac", "\(streams)")
            let sent = try await RelayCase.parameterSets(source), relayed = try await RelayCase.parameterSets(got)
            #expect(!relayed.sps.isEmpty && relayed.sps == sent.sps, "not re-encoded: the publisher's SPS")
            let f = try #require(Audio.dominantFrequency(try await RelayCase.audioSamples(got)))
            #expect(abs(f - 440) <= 440 * 0.02, "dominant \(f) Hz")

            // Paused: frames held back and counted, none sent; resumed: sent again.
            let paused = try await serve.request("POST", "/v1/relays/\(id)/pause")
            #expect(paused.status == 200 && (try? paused.json()["paused"] as? Bool) == true, "\(paused.text)")
            let sentAtPause = try await serve.metric("sfubot_relay_frames_total", matching: "result=\"sent\"")
            try await Task.sleep(for: .seconds(2))
            let sentPaused = try await serve.metric("sfubot_relay_frames_total", matching: "result=\"sent\"")
            let held = try await serve.metric("sfubot_relay_frames_total", matching: "result=\"paused\"")
            #expect(sentPaused - sentAtPause <= 5 && held > 50, "while paused: \(sentPaused - sentAtPause) sent, \(held) held back")
            let resumed = try await serve.request("POST", "/v1/relays/\(id)/resume")
            #expect(resumed.status == 200, "\(resumed.text)")
            try await Task.sleep(for: .seconds(1))
            let sentAfter = try await serve.metric("sfubot_relay_frames_total", matching: "result=\"sent\"")
            #expect(sentAfter - sentPaused > 20, "sent again after resume: \(sentAfter - sentPaused)")
            let final = try await serve.request("DELETE", "/v1/relays/\(id)").json()
            #expect(final["state"] as? String == "done", "\(final)")
            let listed = try await serve.request("GET", "/v1/relays").text
            #expect(!listed.contains(secretStream), "the stream name is a secret: \(listed)")
            let opened = try await serve.metric("sfubot_frames_opened_total")
            let framesRelayed = try await serve.metric("sfubot_relay_frames_total", matching: "result=\"sent\"")
            let bytes = try await serve.metric("sfubot_relay_bytes_total")
            #expect(opened > 100 && framesRelayed > 100 && bytes > 10_000, "frames opened \(opened), relayed \(framesRelayed), bytes \(bytes)")
            // The output delay's histogram, as the dashboard reads it: one count per buffer at the sink.
            let delays = try await serve.metric("sfubot_relay_output_delay_seconds_count")
            let slow = try await serve.metric("sfubot_relay_output_delay_seconds_bucket", matching: "le=\"+Inf\"")
            #expect(delays > 100 && slow == delays, "output delay histogram: \(delays) buffers, +Inf bucket \(slow)")
        }

        @Test("a speaker-stream job (to ws://…/{participant}, no participant): Ann's tone reaches the consumer, the token never shows, paused it sends nothing, DELETE ends it done",
              .enabled(if: SpeakerConsumer.missing == nil, "\(SpeakerConsumer.missing ?? "")"))
        func speakerStreamJob() async throws {
            let dir = try Scene.tempDirectory("serve-speakers")
            let source = try SpeakerCase.bursts(440, seconds: 40, in: dir)
            let port = try RelayServers.freePort()
            let (arrivals, out) = (dir.appendingPathComponent("arrivals.jsonl"), dir.appendingPathComponent("wavs"))
            let consumer = try await SpeakerConsumer.start(port: port, out: out, arrivals: arrivals)
            defer { Task { await consumer.stop() } }
            let room = try await Scene.createRoom()
            let publisher = try SpeakerCase.play(source, as: "7:Ann", room: room)
            defer { publisher.signal(SIGKILL) }
            let serve = try await ServeProcess.start(port: 18656, in: dir, extra: ["--relay-allow", "ws://127.0.0.1:\(port)/speakers"])
            defer { serve.process.signal(SIGKILL) }
            let refused = try await serve.request("POST", "/v1/relays", json: ["room": room, "key": ["hex": RelayCase.key],
                                                                               "to": "ws://127.0.0.1:\(port)/other/{participant}"])
            #expect(refused.status == 403, "\(refused.status) \(refused.text)")
            let rtpWithoutParticipant = try await serve.request("POST", "/v1/relays", json: ["room": room, "key": ["hex": RelayCase.key],
                                                                                             "to": "rtp://127.0.0.1:\(port)"])
            #expect(rtpWithoutParticipant.status == 400 && rtpWithoutParticipant.text.contains("participant"), "\(rtpWithoutParticipant.text)")

            let created = try await serve.request("POST", "/v1/relays", json: ["room": room, "key": ["hex": RelayCase.key],
                                                                               "to": "ws://127.0.0.1:\(port)/speakers/{participant}?token=s3cret"])
            #expect(created.status == 201 && !created.text.contains("s3cret"), "\(created.text)")
            let id = try #require(try created.json()["id"] as? String)
            let pcm = { (try? SpeakerCase.arrivals(arrivals).filter { $0.bytes > 0 }.count) ?? 0 }
            #expect(await eventually(within: 40) { pcm() > 100 }, "PCM reached the consumer")

            let paused = try await serve.request("POST", "/v1/relays/\(id)/pause")
            #expect(paused.status == 200, "\(paused.text)")
            try await Task.sleep(for: .milliseconds(500))
            let atPause = pcm()
            try await Task.sleep(for: .seconds(2))
            let whilePaused = pcm() - atPause
            let held = try await serve.metric("sfubot_relay_frames_total", matching: "result=\"paused\"")
            #expect(whilePaused <= 2 && held > 50, "while paused: \(whilePaused) PCM messages arrived, \(held) held back")
            #expect(try await serve.request("POST", "/v1/relays/\(id)/resume").status == 200)
            #expect(await eventually(within: 10) { pcm() > atPause + whilePaused + 50 }, "PCM again after resume")

            let final = try await serve.request("DELETE", "/v1/relays/\(id)").json()
            #expect(final["state"] as? String == "done", "\(final)")
            #expect(!(try await serve.request("GET", "/v1/relays").text).contains("s3cret"))
            // The consumer has the relay's close (its files flushed) a moment after the relay ends.
            try await Task.sleep(for: .seconds(1))
            await consumer.stop()
            let messages = try SpeakerCase.arrivals(arrivals)
            #expect(messages.first?.text?["type"] as? String == "start" && !messages.contains { $0.text?["type"] as? String == "left" })
            let samples = try SpeakerCase.samples(out.appendingPathComponent("7.wav"))
            #expect(Audio.power(samples[...], at: 440, rate: 16000) > 100 * Audio.power(samples[...], at: 660, rate: 16000))
        }

        @Test("a relay job whose participant never publishes ends failed, saying nothing was relayed")
        func participantNeverThere() async throws {
            let dir = try Scene.tempDirectory("serve-relay-absent")
            let serve = try await ServeProcess.start(port: 18654, in: dir, extra: ["--relay-allow", "rtp://127.0.0.1:18655"])
            defer { serve.process.signal(SIGKILL) }
            let room = try await Scene.createRoom()
            let created = try await serve.request("POST", "/v1/relays", json: ["room": room, "key": ["hex": RelayCase.key], "participant": "9",
                                                                               "to": "rtp://127.0.0.1:18655", "durationSeconds": 3])
            let id = try #require(try created.json()["id"] as? String, "\(created.text)")
            let ended = try await serve.waitFor("/v1/relays/\(id)", within: .seconds(30)) { $0["state"] as? String == "failed" }
            #expect((ended["lastError"] as? String ?? "").contains("nothing was relayed"), "\(ended)")
        }
    }
}
