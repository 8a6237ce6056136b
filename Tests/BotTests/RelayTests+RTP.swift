import Foundation
import GStreamerKit
import Testing
import TestSupport

extension MediaScene.RelayTests {
    /// Plain RTP, as Janus's rtp_forward sends it: Opus to the port, H.264 to port + 2, received
    /// by a GStreamer udpsrc graph and decoded: the tone, and pictures of the pattern.
    @Test func rtpIsReceivedAndDecoded() async throws {
        let dir = try Scene.tempDirectory("relay-rtp")
        let source = try await RelayCase.source(in: dir)
        let port = try RelayServers.freePort(span: 2)
        let (audio, video) = (dir.appendingPathComponent("rtp-audio.pcm"), dir.appendingPathComponent("rtp-video.gray"))
        let receiver = try Pipeline(description: """
            udpsrc address=127.0.0.1 port=\(port) caps="application/x-rtp,media=audio,encoding-name=OPUS,clock-rate=48000,payload=111"
              ! rtpjitterbuffer latency=100 ! rtpopusdepay ! opusdec ! audioconvert ! audioresample
              ! audio/x-raw,format=S16LE,channels=1,rate=48000 ! filesink location="\(audio.path)" sync=false
            udpsrc address=127.0.0.1 port=\(port + 2) caps="application/x-rtp,media=video,encoding-name=H264,clock-rate=90000,payload=96"
              ! rtpjitterbuffer latency=100 ! rtph264depay ! h264parse ! avdec_h264 ! videoconvert ! videoscale
              ! video/x-raw,format=GRAY8,width=16,height=16 ! filesink location="\(video.path)" sync=false
            """)
        try receiver.setState(.playing)
        let room = try await Scene.createRoom()
        let publisher = try RelayCase.publisher(source, room: room)
        let ran = await (try RelayCase.relay(to: "rtp://127.0.0.1:\(port)", room: room, seconds: 12)).finished()
        publisher.signal(SIGKILL)
        await receiver.stop()
        #expect(ran.status == 0, "relay exited \(ran.status): \(ran.errText.suffix(1500))")
        let samples = try Data(contentsOf: audio).withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        #expect(samples.count >= 48000 * 5, "\(Double(samples.count) / 48000) s of audio decoded")
        let f = try #require(Audio.dominantFrequency(samples))
        #expect(abs(f - 440) <= 440 * 0.02, "dominant \(f) Hz")
        let pictures = [UInt8](try Data(contentsOf: video))
        let frames = pictures.count / 256
        #expect(frames >= 60, "\(frames) pictures decoded")
        // SMPTE bars: light and dark columns across the top row of every picture.
        if frames > 0 {
            let row = pictures[pictures.count - 256..<pictures.count - 240]
            #expect((row.max() ?? 0) - (row.min() ?? 0) > 80, "the last picture's top row: \(Array(row))")
        }
        let c = RelayCase.counters(ran.outText)
        #expect(c.dropped == 0 && c.relayedAudio > 250 && c.relayedVideo > 60, "\(ran.outText)")
        // Every RTP packet reaches a udpsink: at least one buffer per frame relayed.
        let delay = try #require(RelayCase.outputDelay(ran.outText), "no output delay line: \(ran.outText)")
        #expect(delay.buffers >= c.relayedAudio + c.relayedVideo, "\(delay)")
        print("relay output delay to rtp: p50 \(delay.p50) ms, p95 \(delay.p95) ms over \(delay.buffers) buffers")
    }

    /// SRTP out: ffmpeg, given the key in an SDP's a=crypto line (RFC 4568), reads the
    /// participant's H.264 as sent and the tone; ffmpeg given another key reads nothing.
    @Test func srtpIsReadByFFmpegWithTheKeyOnly() async throws {
        let dir = try Scene.tempDirectory("relay-srtp")
        let source = try await RelayCase.source(in: dir)
        let (port, otherPort) = (try RelayServers.freePort(span: 2), try RelayServers.freePort(span: 2))
        let key = Data((0..<30).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }).base64EncodedString()
        let other = Data((0..<30).map { UInt8(truncatingIfNeeded: $0 &* 53 &+ 7) }).base64EncodedString()
        func sdp(_ port: Int, _ key: String) throws -> URL {
            let file = dir.appendingPathComponent("in-\(port).sdp")
            try """
                v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=sfubot relay\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r
                m=audio \(port) RTP/SAVP 111\r\na=rtpmap:111 opus/48000/2\r\na=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:\(key)\r
                m=video \(port + 2) RTP/SAVP 96\r\na=rtpmap:96 H264/90000\r\na=fmtp:96 packetization-mode=1\r
                a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:\(key)\r

                """.write(to: file, atomically: true, encoding: .utf8)
            return file
        }
        func read(_ sdp: URL, into file: URL) throws -> ChildProcess {
            try ChildProcess(URL(fileURLWithPath: "/usr/bin/timeout"), ["-s", "INT", "14", "/usr/bin/ffmpeg", "-hide_banner", "-loglevel", "error", "-y",
                                                                        "-protocol_whitelist", "file,udp,rtp,srtp", "-i", sdp.path, "-c", "copy", file.path])
        }
        let (got, wrongGot) = (dir.appendingPathComponent("got.mkv"), dir.appendingPathComponent("wrong.mkv"))
        let reader = try read(try sdp(port, key), into: got)
        let wrongReader = try read(try sdp(otherPort, other), into: wrongGot)
        let room = try await Scene.createRoom()
        let publisher = try RelayCase.publisher(source, room: room)
        let encoded = key.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? key
        // One relay per reader: each reads its own port; the second one's key is not the reader's.
        let relays = [try RelayCase.relay(to: "srtp://127.0.0.1:\(port)?key=\(encoded)", room: room, seconds: 12),
                      try RelayCase.relay(to: "srtp://127.0.0.1:\(otherPort)?key=\(encoded)", room: room, seconds: 12)]
        var ran: [ChildProcess.Finished] = []
        for r in relays { ran.append(await r.finished()) }
        publisher.signal(SIGKILL)
        _ = await reader.finished()
        _ = await wrongReader.finished()
        #expect(ran.allSatisfy { $0.status == 0 }, "\(ran.map { $0.errText.suffix(800) })")
        #expect(!ran[0].errText.contains(key) && !ran[0].outText.contains(key), "the key never shows")
        let streams = try await RelayCase.probe(got)
        #expect(streams.video?.codec == "h264" && streams.audio?.codec == "opus", "\(streams)")
        let sent = try await RelayCase.parameterSets(source), relayed = try await RelayCase.parameterSets(got)
        #expect(!relayed.sps.isEmpty && relayed.sps == sent.sps, "not re-encoded: the publisher's SPS")
        let f = try #require(Audio.dominantFrequency(try await RelayCase.audioSamples(got)))
        #expect(abs(f - 440) <= 440 * 0.02, "dominant \(f) Hz")
        let wrongSize = (try? FileManager.default.attributesOfItem(atPath: wrongGot.path)[.size] as? Int) ?? 0
        #expect(wrongSize < 1000, "another key reads nothing: \(wrongSize) bytes")
    }

    /// The wrong key: not one byte leaves the relay, every frame is a counted drop.
    @Test func wrongKeySendsNothing() async throws {
        let dir = try Scene.tempDirectory("relay-wrong-key")
        let source = try await RelayCase.source(in: dir, seconds: 12)
        let port = try RelayServers.freePort(span: 2)
        let (audio, video) = (dir.appendingPathComponent("audio.rtp"), dir.appendingPathComponent("video.rtp"))
        let receiver = try Pipeline(description: """
            udpsrc address=127.0.0.1 port=\(port) ! filesink location="\(audio.path)" sync=false
            udpsrc address=127.0.0.1 port=\(port + 2) ! filesink location="\(video.path)" sync=false
            """)
        try receiver.setState(.playing)
        let room = try await Scene.createRoom()
        let publisher = try RelayCase.publisher(source, room: room)
        let ran = await (try RelayCase.relay(to: "rtp://127.0.0.1:\(port)", room: room, seconds: 8, key: RelayCase.otherKey)).finished()
        publisher.signal(SIGKILL)
        await receiver.stop()
        #expect(ran.status == 0, "relay exited \(ran.status): \(ran.errText.suffix(1500))")
        let sizes = [audio, video].map { (try? FileManager.default.attributesOfItem(atPath: $0.path)[.size] as? Int) ?? 0 }
        #expect(sizes == [0, 0], "bytes that left the relay: \(sizes)")
        let c = RelayCase.counters(ran.outText)
        #expect(c.relayedAudio == 0 && c.relayedVideo == 0 && c.dropped > 200, "\(ran.outText)")
    }

    /// nginx down when the relay starts, up 6 s later: the relay retried (and said so) and the
    /// stream arrives; the frames nginx never got are a hole in the stream, so the exit says 74.
    @Test func destinationDownThenUp() async throws {
        let dir = try Scene.tempDirectory("relay-down-up")
        let source = try await RelayCase.source(in: dir, seconds: 28)
        let port = try RelayServers.freePort()
        let room = try await Scene.createRoom()
        let publisher = try RelayCase.publisher(source, room: room)
        let relay = try RelayCase.relay(to: "rtmp://127.0.0.1:\(port)/live/late", room: room, seconds: 24)
        try await Task.sleep(for: .seconds(6))
        let nginx = try await RelayServers.nginxRTMP(port: port, in: dir)
        let got = dir.appendingPathComponent("late.flv")
        let read = await RelayCase.readBack("rtmp://127.0.0.1:\(port)/live/late", seconds: 4, to: got)
        let ran = await relay.finished()
        publisher.signal(SIGKILL)
        await nginx.stop()
        #expect(ran.status == 74 && ran.errText.contains("opened frames were not sent"), "relay exited \(ran.status): \(ran.errText.suffix(1500))")
        #expect(read, "nothing came back once nginx was up: \(ran.errText.suffix(1500))")
        let streams = try await RelayCase.probe(got)
        #expect(streams.video?.codec == "h264" && streams.audio?.codec == "aac", "\(streams)")
        let c = RelayCase.counters(ran.outText)
        #expect(c.failures >= 1 && c.outputs >= 2 && c.relayedVideo > 30, "\(ran.outText)")
        #expect(ran.errText.contains("Connection refused") && ran.errText.contains("trying again"), "the log says the destination is down")
        #expect(!ran.errText.contains("/live/late"), "the stream name (often its key) is never logged")
    }
}
