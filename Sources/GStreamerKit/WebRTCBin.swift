internal import CGStreamer
internal import CGStreamerShims
public import Foundation
import Synchronization
import Locking

/// What webrtcbin reports, in the order it emits it.
public enum WebRTCEvent: Sendable {
    case negotiationNeeded
    /// A local candidate to trickle to the peer (`on-ice-candidate`).
    case iceCandidate(mline: Int, candidate: String)
    case iceGatheringState(String)
    case iceConnectionState(String)
    case connectionState(String)
}

/// A receive pad webrtcbin added, with the `mid` of its transceiver.
public struct IncomingPad: Sendable {
    public let pad: Pad
    public let mid: String?
}

/// A `webrtcbin` from a pipeline: offer/answer and descriptions as async calls, ICE
/// candidates in and out, transceivers, incoming pads.
///
/// On creation libnice's UPnP (SSDP multicast) and ICE-TCP are turned off, so the bot only
/// sends where its candidates point.
public final class WebRTCBin: @unchecked Sendable {
    // @unchecked: webrtcbin's action signals are thread-safe; `connections` is set once in init.
    public let element: Element
    /// Everything webrtcbin reports except pads, for the signalling task to consume.
    public let events: AsyncStream<WebRTCEvent>
    private let sink: Sink
    private var connections: [SignalConnection] = []
    /// TURN servers added and whether only relayed candidates may be used (`useRelayOnly`):
    /// a participant tells a TURN failure from any other ICE failure with them.
    private let turn = Locked((servers: 0, relayOnly: false))

    public init(_ element: Element) throws(GStreamerError) {
        guard (try? element.get("bundle-policy")) != nil else {
            throw .webrtc("'\(element.name)' is not a webrtcbin")
        }
        self.element = element
        let (events, continuation) = AsyncStream.makeStream(of: WebRTCEvent.self)
        self.events = events
        self.sink = Sink(continuation)
        switch sfb_webrtc_lock_down_ice(element.pointer) {
        case 0: break
        case 1: throw .webrtc("no ICE agent on \(element.name)")
        default: throw .webrtc("cannot reach libnice's agent to turn UPnP off (need GStreamer 1.22's nice ICE)")
        }
        connectSignals()
    }

    deinit {
        connections.forEach { $0.disconnect() }
        sink.continuation.finish()
    }

    /// Called on a GStreamer thread for each new src pad; link it before returning, or
    /// incoming data has nowhere to go.
    public func onIncomingPad(_ handler: @escaping @Sendable (IncomingPad) -> Void) {
        sink.padHandler.withLock { $0 = handler }
    }

    /// Called on a GStreamer thread for each data channel the peer opens (`on-data-channel`),
    /// with the channel already wrapped: its `events` hold everything from its first message.
    /// Without a handler, such channels are left to webrtcbin.
    public func onDataChannel(_ handler: @escaping @Sendable (DataChannel) -> Void) {
        sink.dataChannelHandler.withLock { $0 = handler }
    }

    /// Opens a data channel (`create-data-channel`, options as its GstStructure). webrtcbin must
    /// be at least READY (it refuses while closed); a channel made before the offer puts an
    /// `m=application` section in it, one made later asks to negotiate again.
    public func createDataChannel(_ label: String, options: DataChannel.Options = .init()) throws(GStreamerError) -> DataChannel {
        func limited(_ value: Int?) -> gint { value.flatMap { gint(exactly: $0) }.map { max($0, -1) } ?? -1 }
        guard let channel = sfb_webrtc_create_data_channel(
            element.pointer, label, options.ordered ? 1 : 0, limited(options.maxRetransmits), limited(options.maxPacketLifetime),
            options.subprotocol, limited(options.negotiatedID))
        else { throw .webrtc("\(element.name) refused data channel '\(label)' (not READY, id taken, or no SCTP elements)") }
        return DataChannel(takingOwnership: channel)
    }

    public func createOffer() async throws(GStreamerError) -> SessionDescription {
        try await description(from: "offer") { sfb_webrtc_create_offer(element.pointer, $0) }
    }

    public func createAnswer() async throws(GStreamerError) -> SessionDescription {
        try await description(from: "answer") { sfb_webrtc_create_answer(element.pointer, $0) }
    }

    public func setLocalDescription(_ d: SessionDescription) async throws(GStreamerError) {
        let gst = try d.makeGst()
        defer { gst_webrtc_session_description_free(gst) }
        try await expectReply("set-local-description") { sfb_webrtc_set_local_description(element.pointer, gst, $0) }
    }

    public func setRemoteDescription(_ d: SessionDescription) async throws(GStreamerError) {
        let gst = try d.makeGst()
        defer { gst_webrtc_session_description_free(gst) }
        try await expectReply("set-remote-description") { sfb_webrtc_set_remote_description(element.pointer, gst, $0) }
    }

    /// Adds a remote candidate (`add-ice-candidate`); an empty string ends the remote candidates.
    /// A negative `mline` or one beyond `guint` comes from a broken or hostile peer: the
    /// candidate is dropped (false) instead of trapping on the conversion.
    @discardableResult
    public func addIceCandidate(mline: Int, candidate: String) -> Bool {
        guard let index = guint(exactly: mline) else { return false }
        sfb_webrtc_add_ice_candidate(element.pointer, index, candidate)
        return true
    }

    /// Adds a TURN server (`add-turn-server`), `turn://user:password@host:port` or `turns://…`.
    public func addTurnServer(_ uri: String) throws(GStreamerError) {
        // The URI holds the TURN password: the error names only the host.
        guard sfb_webrtc_add_turn_server(element.pointer, uri) != 0 else {
            throw .badPropertyValue(element: element.name, property: "add-turn-server", value: String(uri.split(separator: "@").last ?? "?"))
        }
        turn.withLock { $0.servers += 1 }
    }

    /// Only relayed candidates, through the TURN servers (`ice-transport-policy` = relay).
    public func useRelayOnly() throws(GStreamerError) {
        try element.set("ice-transport-policy", "relay")
        turn.withLock { $0.relayOnly = true }
    }

    /// How many TURN servers were added, and whether only relayed candidates may be used.
    public var turnSetting: (servers: Int, relayOnly: Bool) { turn.withLock { $0 } }

    public enum Direction: Sendable { case sendOnly, receiveOnly, sendReceive }

    /// Adds a transceiver with the given caps (`add-transceiver`).
    public func addTransceiver(_ direction: Direction, caps: String) throws(GStreamerError) {
        guard let c = gst_caps_from_string(caps) else { throw .webrtc("bad caps \(caps)") }
        defer { gst_mini_object_unref(UnsafeMutableRawPointer(c).assumingMemoryBound(to: GstMiniObject.self)) }
        let d: GstWebRTCRTPTransceiverDirection = switch direction {
        case .sendOnly: GST_WEBRTC_RTP_TRANSCEIVER_DIRECTION_SENDONLY
        case .receiveOnly: GST_WEBRTC_RTP_TRANSCEIVER_DIRECTION_RECVONLY
        case .sendReceive: GST_WEBRTC_RTP_TRANSCEIVER_DIRECTION_SENDRECV
        }
        guard let t = sfb_webrtc_add_transceiver(element.pointer, d, c) else { throw .webrtc("add-transceiver failed") }
        gst_object_unref(UnsafeMutableRawPointer(t))
    }

    /// webrtcbin's statistics (`get-stats`) in GstStructure text form.
    public func stats() async throws(GStreamerError) -> String {
        switch await awaitPromise({ sfb_webrtc_get_stats(element.pointer, nil, $0) }) {
        case .replied(let s): return s.text
        case .interrupted, .expired: throw .promise("get-stats was interrupted")
        }
    }

    /// Receive streams skip rtpjitterbuffer (its queue, its thread and its timers): packets go
    /// on, in arrival order, in the thread that received them. For receivers that only count
    /// and decrypt (load-test subscribers); loss and jitter still come from the RTP session.
    /// Call before the first remote description.
    public func withoutJitterBuffers() throws(GStreamerError) {
        switch sfb_webrtc_plain_jitterbuffers(element.pointer) {
        case 0: return
        case 1: throw .webrtc("no rtpbin inside \(element.name)")
        default: throw .webrtc("rtpbin has no request-jitterbuffer signal (GStreamer ≥ 1.18 needed)")
        }
    }

    /// Receive streams get an `sfbreorder` instead of rtpjitterbuffer (rtpbin's
    /// `request-jitterbuffer`): packets are put back in order, timestamped from RTP and pushed
    /// in the thread that received them, with no thread or timer per stream; a gap asks for a
    /// retransmission (NACK: every transceiver gets `do-nack`, which webrtcbin's answer needs to
    /// offer it) and is given up, as a counted loss, once a packet arrives more than webrtcbin's
    /// `latency` after it was seen. rtpbin's lip sync works as with rtpjitterbuffer (RTCP sender
    /// reports, `ts-offset`); a stream's first packets wait for it (2 s at most). The session's
    /// RTCP goes out one compound per stream (`sfb_rtcp_split`, for Janus's NACK handling).
    /// Call before the first remote description. CGStreamerShims/include/sfb_reorder.h.
    public func withReorderBuffers() throws(GStreamerError) {
        switch sfb_webrtc_reorder_jitterbuffers(element.pointer) {
        case 0: return
        case 1: throw .webrtc("no rtpbin inside \(element.name)")
        case 2: throw .webrtc("rtpbin has no request-jitterbuffer signal (GStreamer ≥ 1.18 needed)")
        default: throw .webrtc("the sfbreorder element could not be registered")
        }
    }

    public var iceConnectionState: String { (try? element.get("ice-connection-state")) ?? "?" }

    /// When a state property (`ice-connection-state`, `connection-state`, `ice-gathering-state`)
    /// first took `value`, as webrtcbin notified it: the events reach their consumer later, by
    /// as much as a busy process delays its tasks (the load test times join phases with this).
    public func firstReached(_ property: String, _ value: String) -> Date? {
        sink.firstReached.withLock { $0["\(property)=\(value)"] }
    }

    // MARK: - Internals

    private func description(from field: String, _ call: (UnsafeMutablePointer<GstPromise>) -> Void) async throws(GStreamerError) -> SessionDescription {
        switch await awaitPromise(call) {
        case .replied(let s):
            guard let p = s.pointer else { throw .promise("create-\(field) gave no reply") }
            if let error = takeGString(sfb_structure_get_error_message(p)) { throw .promise("create-\(field): \(error)") }
            guard let gst = sfb_structure_get_sdp(p, field), let d = SessionDescription(gst: gst) else {
                throw .promise("create-\(field) reply has no \(field)")
            }
            return d
        case .interrupted, .expired:
            throw .promise("create-\(field) was interrupted")
        }
    }

    private func expectReply(_ what: String, _ call: (UnsafeMutablePointer<GstPromise>) -> Void) async throws(GStreamerError) {
        switch await awaitPromise(call) {
        case .replied(let s):
            if let p = s.pointer, let error = takeGString(sfb_structure_get_error_message(p)) { throw .promise("\(what): \(error)") }
        case .interrupted, .expired:
            throw .promise("\(what) was interrupted")
        }
    }

    /// What signal handlers reach; retained once per connection, released by GLib's destroy
    /// notify, so a handler running during deinit never sees freed memory.
    private final class Sink: Sendable {
        let continuation: AsyncStream<WebRTCEvent>.Continuation
        let padHandler = Locked<(@Sendable (IncomingPad) -> Void)?>(nil)
        let dataChannelHandler = Locked<(@Sendable (DataChannel) -> Void)?>(nil)
        /// When each "property=value" state was first reached, taken in the notify handler.
        let firstReached = Locked<[String: Date]>([:])
        init(_ c: AsyncStream<WebRTCEvent>.Continuation) { continuation = c }
        static func from(_ data: UnsafeMutableRawPointer?) -> Sink { Unmanaged<Sink>.fromOpaque(data!).takeUnretainedValue() }
    }

    private func connectSignals() {
        typealias NoArg = @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> Void
        typealias Candidate = @convention(c) (UnsafeMutableRawPointer?, guint, UnsafePointer<gchar>?, UnsafeMutableRawPointer?) -> Void
        typealias PadAdded = @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<GstPad>?, UnsafeMutableRawPointer?) -> Void
        typealias DataChannelAdded = @convention(c) (UnsafeMutableRawPointer?, OpaquePointer?, UnsafeMutableRawPointer?) -> Void
        typealias Notify = @convention(c) (UnsafeMutablePointer<GObject>?, UnsafeMutablePointer<GParamSpec>?, UnsafeMutableRawPointer?) -> Void

        let negotiation: NoArg = { _, data in Sink.from(data).continuation.yield(.negotiationNeeded) }
        let candidate: Candidate = { _, mline, text, data in
            guard let text else { return }
            Sink.from(data).continuation.yield(.iceCandidate(mline: Int(mline), candidate: String(cString: text)))
        }
        let padAdded: PadAdded = { _, pad, data in
            guard let pad, gst_pad_get_direction(pad) == GST_PAD_SRC else { return }
            // The pad is lent for the call; webrtcbin keeps its own reference.
            let incoming = IncomingPad(pad: Pad(retaining: pad), mid: takeGString(sfb_webrtc_pad_mid(pad)))
            Sink.from(data).padHandler.withLock { $0 }?(incoming)
        }
        let dataChannel: DataChannelAdded = { _, channel, data in
            guard let channel, let handler = Sink.from(data).dataChannelHandler.withLock({ $0 }) else { return }
            // The channel is lent for the call; the wrapper takes its own reference and connects
            // its signals before returning, so no message arrives unheard.
            handler(DataChannel(retaining: channel))
        }
        let notify: Notify = { object, spec, data in
            guard let object, let spec else { return }
            let name = String(cString: spec.pointee.name)
            let value = takeGString(sfb_object_get_property_string(object, name)) ?? "?"
            let sink = Sink.from(data), now = Date()
            sink.firstReached.withLock { if $0["\(name)=\(value)"] == nil { $0["\(name)=\(value)"] = now } }
            let c = sink.continuation
            switch name {
            case "ice-gathering-state": c.yield(.iceGatheringState(value))
            case "ice-connection-state": c.yield(.iceConnectionState(value))
            default: c.yield(.connectionState(value))
            }
        }
        let release: GClosureNotify = { data, _ in if let data { Unmanaged<Sink>.fromOpaque(data).release() } }
        func connect(_ signal: String, _ handler: GCallback) -> SignalConnection {
            SignalConnection(element, signal: signal, handler: handler, data: Unmanaged.passRetained(sink).toOpaque(), release: release)
        }
        connections = [
            connect("on-negotiation-needed", unsafeBitCast(negotiation, to: GCallback.self)),
            connect("on-ice-candidate", unsafeBitCast(candidate, to: GCallback.self)),
            connect("pad-added", unsafeBitCast(padAdded, to: GCallback.self)),
            connect("on-data-channel", unsafeBitCast(dataChannel, to: GCallback.self)),
            connect("notify::ice-gathering-state", unsafeBitCast(notify, to: GCallback.self)),
            connect("notify::ice-connection-state", unsafeBitCast(notify, to: GCallback.self)),
            connect("notify::connection-state", unsafeBitCast(notify, to: GCallback.self)),
        ]
    }
}
