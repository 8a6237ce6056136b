import CGStreamer
import CGStreamerShims
@testable import GStreamerKit
import Testing

/// Data channels made on a webrtcbin with no peer: ownership, options, refusals. Text both ways
/// through Janus is tested against the real server (BotTests' JanusDataChannelTests).
@Suite struct DataChannelTests {
    init() { GStreamer.initialize() }

    func property(_ channel: DataChannel, _ name: String) -> String? {
        takeGString(sfb_object_get_property_string(UnsafeMutableRawPointer(channel.pointer).assumingMemoryBound(to: GObject.self), name))
    }

    @Test func theWrapperOwnsOneReferenceAndWebRTCBinKeepsItsOwn() throws {
        let pipeline = try Pipeline(description: "webrtcbin name=webrtc")
        try pipeline.setState(.ready)
        defer { pipeline.setStateQuietly(.null) }
        let webrtc = try WebRTCBin(pipeline.element(named: "webrtc"))
        let raw: UnsafeMutableRawPointer
        do {
            let channel = try webrtc.createDataChannel("keepalive")
            raw = UnsafeMutableRawPointer(channel.pointer)
            #expect(channel.label == "keepalive")
            #expect(channel.readyState == .connecting)
            #expect(sfb_object_refcount(raw) > 1)
        }
        // Signal connections gone with the wrapper: only webrtcbin's reference is left.
        #expect(sfb_object_refcount(raw) == 1)
    }

    @Test func optionsReachTheChannel() throws {
        let pipeline = try Pipeline(description: "webrtcbin name=webrtc")
        try pipeline.setState(.ready)
        defer { pipeline.setStateQuietly(.null) }
        let webrtc = try WebRTCBin(pipeline.element(named: "webrtc"))
        var options = DataChannel.Options(ordered: false)
        options.maxRetransmits = 0
        options.subprotocol = "ecall"
        options.negotiatedID = 7
        let channel = try webrtc.createDataChannel("k", options: options)
        #expect(property(channel, "ordered") == "false")
        #expect(property(channel, "max-retransmits") == "0")
        #expect(property(channel, "protocol") == "ecall")
        #expect(property(channel, "negotiated") == "true" && property(channel, "id") == "7")
        let reliable = try webrtc.createDataChannel("r")
        #expect(property(reliable, "ordered") == "true" && property(reliable, "negotiated") == "false")
        #expect(throws: GStreamerError.self, "an id already taken") { try webrtc.createDataChannel("again", options: options) }
    }

    @Test func aClosedWebRTCBinRefusesAndAChannelNotOpenSendsNothing() throws {
        let pipeline = try Pipeline(description: "webrtcbin name=webrtc")
        let webrtc = try WebRTCBin(pipeline.element(named: "webrtc"))
        #expect(throws: GStreamerError.self, "webrtcbin below READY is closed") { try webrtc.createDataChannel("keepalive") }
        try pipeline.setState(.ready)
        defer { pipeline.setStateQuietly(.null) }
        let channel = try webrtc.createDataChannel("keepalive")
        #expect(throws: GStreamerError.self) { try channel.send(text: "ping:1") }
    }
}
