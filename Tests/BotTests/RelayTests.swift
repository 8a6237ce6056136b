import Foundation
import GStreamerKit
import Testing
import TestSupport

extension MediaScene {
    /// `sfubot relay`: a publisher's sealed H.264 and Opus, decrypted, out to real servers started
    /// here on 127.0.0.1 (nginx-rtmp, srt-live-transmit, a GStreamer RTP receiver), read back.
    @Suite(.enabled(if: RelayServers.missing == nil, "\(RelayServers.missing ?? "")")) struct RelayTests {
        /// RTMP: nginx gets the publisher's own H.264 (the file's SPS and PPS, byte for byte: not
        /// re-encoded) and AAC that decodes to the 440 Hz tone.
        @Test func rtmpCarriesTheH264AsSentAndTheTone() async throws {
            let dir = try Scene.tempDirectory("relay-rtmp")
            let source = try await RelayCase.source(in: dir)
            let port = try RelayServers.freePort()
            let nginx = try await RelayServers.nginxRTMP(port: port, in: dir)
            let room = try await Scene.createRoom()
            let publisher = try RelayCase.publisher(source, room: room)
            let relay = try RelayCase.relay(to: "rtmp://127.0.0.1:\(port)/live/call", room: room, seconds: 14)
            let got = dir.appendingPathComponent("got.flv")
            let read = await RelayCase.readBack("rtmp://127.0.0.1:\(port)/live/call", seconds: 6, to: got)
            let ran = await relay.finished()
            publisher.signal(SIGKILL)
            await nginx.stop()
            #expect(read, "nothing came back from nginx: \(ran.errText.suffix(1500))")
            try await Self.checkStream(got, source: source, ran: ran)
        }

        /// SRT: the same through srt-live-transmit, as MPEG-TS.
        @Test func srtCarriesTheH264AsSentAndTheTone() async throws {
            let dir = try Scene.tempDirectory("relay-srt")
            let source = try await RelayCase.source(in: dir)
            let (port, readPort) = (try RelayServers.freePort(), try RelayServers.freePort())
            let server = try await RelayServers.srt(port: port, readPort: readPort)
            let room = try await Scene.createRoom()
            let publisher = try RelayCase.publisher(source, room: room)
            let relay = try RelayCase.relay(to: "srt://127.0.0.1:\(port)", room: room, seconds: 14)
            let got = dir.appendingPathComponent("got.ts")
            let read = await RelayCase.readBack("srt://127.0.0.1:\(readPort)", seconds: 6, to: got)
            let ran = await relay.finished()
            publisher.signal(SIGKILL)
            await server.stop()
            #expect(read, "nothing came back from srt-live-transmit: \(ran.errText.suffix(1500))")
            try await Self.checkStream(got, source: source, ran: ran)
        }

        /// What any muxed destination must hold: the source's H.264 parameter sets, keyframes, the
        /// picture size, and AAC decoding to 440 Hz; and the relay dropped nothing.
        static func checkStream(_ got: URL, source: URL, ran: ChildProcess.Finished) async throws {
            #expect(ran.status == 0, "relay exited \(ran.status): \(ran.errText.suffix(1500))")
            let streams = try await RelayCase.probe(got)
            let video = try #require(streams.video, "no video in what came back")
            #expect(video.codec == "h264" && video.width == 640 && video.height == 360, "\(video)")
            #expect(streams.audio?.codec == "aac" && streams.audio?.rate == 48000, "\(String(describing: streams.audio))")
            #expect(streams.duration >= 4, "\(streams.duration) s came back")
            let sent = try await RelayCase.parameterSets(source), relayed = try await RelayCase.parameterSets(got)
            #expect(!relayed.sps.isEmpty && relayed.sps == sent.sps && relayed.pps == sent.pps, "SPS/PPS: sent \(sent.sps) \(sent.pps), relayed \(relayed.sps) \(relayed.pps)")
            #expect(relayed.idr >= 2, "\(relayed.idr) keyframes in 6 s (one every 2 s)")
            let samples = try await RelayCase.audioSamples(got)
            let f = try #require(Audio.dominantFrequency(samples), "\(samples.count) samples")
            #expect(abs(f - 440) <= 440 * 0.02, "dominant \(f) Hz")
            let c = RelayCase.counters(ran.outText)
            #expect(c.dropped == 0 && c.relayedAudio > 250 && c.relayedVideo > 60 && c.failures == 0, "\(ran.outText)")
            // Measured where the sink takes single buffers: FLV (mpegtsmux hands srtsink lists).
            if got.pathExtension == "flv" {
                let delay = try #require(RelayCase.outputDelay(ran.outText), "no output delay line: \(ran.outText)")
                #expect(delay.buffers > 100, "\(delay)")
                print("relay output delay to rtmp: p50 \(delay.p50) ms, p95 \(delay.p95) ms over \(delay.buffers) buffers")
            }
        }
    }
}
