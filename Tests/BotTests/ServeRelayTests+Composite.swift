import Foundation
import Testing
import TestSupport

extension MediaScene.ServeRelayTests {
    /// A relay job of the whole room (`to` rtmp, no `participant`, issue 43 items 1 and 6): the
    /// composite at the size asked, encoded once, with the tone; a layout with a participant is
    /// 400; GET says the layout.
    @Test("a relay job of the whole room (no participant, layout speaker, size 960x540): nginx gets 960x540 H.264 and the tone; layout with participant is 400")
    func compositeRelayJob() async throws {
        let dir = try Scene.tempDirectory("serve-relay-composite")
        let source = try await RelayCase.source(in: dir)
        let port = try RelayServers.freePort()
        let nginx = try await RelayServers.nginxRTMP(port: port, in: dir)
        let room = try await Scene.createRoom()
        let publisher = try RelayCase.publisher(source, room: room)
        defer { publisher.signal(SIGKILL) }
        let serve = try await ServeProcess.start(port: 18661, in: dir, extra: ["--relay-allow", "rtmp://127.0.0.1:\(port)/live"])
        defer { serve.process.signal(SIGKILL) }
        let to = "rtmp://127.0.0.1:\(port)/live/room"
        let both = try await serve.request("POST", "/v1/relays", json: ["room": room, "key": ["hex": RelayCase.key], "to": to, "participant": "7", "layout": "grid"])
        #expect(both.status == 400 && both.text.contains("layout"), "\(both.status) \(both.text)")

        let created = try await serve.request("POST", "/v1/relays", json: ["room": room, "key": ["hex": RelayCase.key], "to": to,
                                                                           "layout": "speaker", "size": "960x540"])
        let id = try #require(try created.json()["id"] as? String, "\(created.text)")
        #expect(try created.json()["layout"] as? String == "speaker", "\(created.text)")
        _ = try await serve.waitFor("/v1/relays/\(id)", within: .seconds(40)) { $0["relayPhase"] as? String == "sending" }
        // The participant's audio in the mix (its slot's frames opening), not only the composite's start.
        let mixing = await eventually(within: 30) {
            (try? await serve.metric("sfubot_frames_opened_total", matching: "kind=\"audio\"")) ?? 0 > 100
        }
        #expect(mixing, "the participant's audio opened in the job")
        let got = dir.appendingPathComponent("got.flv")
        let read = await RelayCase.readBack(to, seconds: 6, to: got)
        let final = try await serve.request("DELETE", "/v1/relays/\(id)").json()
        await nginx.stop()
        #expect(read, "nothing came back from nginx")
        #expect(final["state"] as? String == "done", "\(final)")
        let streams = try await RelayCase.probe(got)
        let video = try #require(streams.video, "no video")
        #expect(video.codec == "h264" && video.width == 960 && video.height == 540, "the composite's size: \(video)")
        // The last 3 s: the stream's first moments may be the mix before the participant's slot.
        let f = try #require(Audio.dominantFrequency(Array(try await RelayCase.audioSamples(got).suffix(3 * 48000))))
        #expect(abs(f - 440) <= 9, "the mixed audio: \(f) Hz")
        print("serve composite relay job: \(video.width)x\(video.height) \(video.codec), \(f) Hz")
    }
}
