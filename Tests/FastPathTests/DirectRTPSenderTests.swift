import FastPath
import GStreamerKit
import Testing

/// The direct send path refuses, with a reason, whatever it cannot send safely; that it sends
/// what Janus accepts and subscribers open is BotTests' LoadRunTests (both send paths).
@Suite struct DirectRTPSenderTests {
    init() { GStreamer.initialize() }

    @Test func beforeDTLSThereIsNoKeyAndNothingIsSent() throws {
        let pipeline = try Pipeline(description: """
            audiotestsrc num-buffers=1 ! opusenc ! rtpopuspay ! application/x-rtp,media=audio,encoding-name=OPUS,clock-rate=48000,payload=111 \
            ! webrtcbin name=webrtc bundle-policy=max-bundle
            """)
        let webrtc = try WebRTCBin(pipeline.element(named: "webrtc"))
        // No transport yet: webrtcbin builds its srtpenc and nicesink once it is running.
        #expect { try DirectRTPSender(webrtc) } throws: { "\($0)".contains("no srtpenc yet") || "\($0)".contains("not loaded") }
        try pipeline.setState(.playing)
        defer { pipeline.setStateQuietly(.null) }
        // A transport exists once a transceiver is negotiated; with no peer, no DTLS and no key
        // (srtpenc's random key until DTLS sets its own does not count).
        #expect { try DirectRTPSender(webrtc) } throws: { error in
            let s = "\(error)"
            return s.contains("no DTLS key yet") || s.contains("no srtpenc yet") || s.contains("no nicesink yet")
        }
    }
}

/// The receive shortcut refuses, with a reason, a webrtcbin whose receive side it does not
/// find; that packets it carries are opened is LoadRunTests (both receive paths, and a UDP cut).
@Suite struct ReceiveInlineTests {
    init() { GStreamer.initialize() }

    @Test func withoutATransportThereIsNothingToShortcut() throws {
        let pipeline = try Pipeline(description: "webrtcbin name=webrtc bundle-policy=max-bundle")
        let webrtc = try WebRTCBin(pipeline.element(named: "webrtc"))
        #expect { try ReceiveInline(webrtc) } throws: { "\($0)".contains("no nicesrc yet") }
    }
}
