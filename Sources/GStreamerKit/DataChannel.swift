internal import CGStreamer
internal import CGStreamerShims
import Synchronization

/// One WebRTC data channel of a webrtcbin (`GstWebRTCDataChannel`): text out with
/// `send(text:)`, text in and ready-state changes in `events`.
///
/// Made by `WebRTCBin.createDataChannel` (our side opens it) or handed to
/// `WebRTCBin.onDataChannel` (the peer opened it). Owns one reference to the channel, dropped
/// in deinit; webrtcbin keeps its own, so dropping this wrapper does not close the channel.
public final class DataChannel: @unchecked Sendable {
    // @unchecked: GstWebRTCDataChannel locks itself for sends and property reads; `connections`
    // is set once in init.

    /// `ready-state` (GstWebRTCDataChannelState).
    public enum ReadyState: Sendable, Equatable { case connecting, open, closing, closed }

    /// What the channel reports, in the order it emits it.
    public enum Event: Sendable, Equatable {
        /// `on-open`: text can be sent.
        case open
        /// `on-message-string`: a text message from the peer.
        case text(String)
        /// `on-error`, with GLib's message.
        case failed(String)
        /// `on-close`: nothing follows; `events` ends here.
        case closed
    }

    /// The options `create-data-channel` reads from its GstStructure.
    public struct Options: Sendable {
        public var ordered = true
        /// Unreliable channels give up after this many retransmits, or after this many
        /// milliseconds (`max-retransmits`, `max-packet-lifetime`); nil: reliable.
        public var maxRetransmits: Int?
        public var maxPacketLifetime: Int?
        public var subprotocol: String?
        /// A channel both sides agree on out of band (`negotiated`, `id`): no in-band open.
        public var negotiatedID: Int?
        public init(ordered: Bool = true) { self.ordered = ordered }
    }

    /// `label`, as the opener named the channel.
    public let label: String
    /// Open, text, errors and close; ends after `.closed` (or when the wrapper goes away).
    /// Binary messages (`on-message-data`) are not carried: nothing here speaks them.
    public let events: AsyncStream<Event>
    // GstWebRTCDataChannel's struct is private since 1.22: Swift sees an opaque pointer.
    let pointer: OpaquePointer
    private let sink: Sink
    private var connections: [SignalConnection] = []

    /// Takes over a reference the caller hands over (`create-data-channel`'s return value).
    init(takingOwnership pointer: OpaquePointer) {
        self.pointer = pointer
        label = takeGString(sfb_data_channel_label(pointer)) ?? ""
        let (events, continuation) = AsyncStream.makeStream(of: Event.self)
        self.events = events
        sink = Sink(continuation)
        connectSignals()
        // A channel the peer opened may be open before we connected to `on-open`.
        if readyState == .open { sink.reportOpen() }
    }

    /// Takes a reference of its own to a channel it was lent (`on-data-channel`'s argument).
    convenience init(retaining pointer: OpaquePointer) {
        g_object_ref(UnsafeMutableRawPointer(pointer))
        self.init(takingOwnership: pointer)
    }

    deinit {
        connections.forEach { $0.disconnect() }
        sink.continuation.finish()
        g_object_unref(UnsafeMutableRawPointer(pointer))
    }

    public var readyState: ReadyState {
        switch sfb_data_channel_ready_state(pointer) {
        case GST_WEBRTC_DATA_CHANNEL_STATE_OPEN: .open
        case GST_WEBRTC_DATA_CHANNEL_STATE_CLOSING: .closing
        case GST_WEBRTC_DATA_CHANNEL_STATE_CLOSED: .closed
        default: .connecting  // CONNECTING, or 0 before webrtcbin has a transport for it
        }
    }

    /// Sends a text message (`gst_webrtc_data_channel_send_string_full`, what the `send-string`
    /// action does, but with its error reported): fails unless the channel is open.
    public func send(text: String) throws(GStreamerError) {
        // Sending on a channel not open only logs a critical in GStreamer 1.22.
        guard readyState == .open else { throw .webrtc("data channel '\(label)' is not open") }
        var error: UnsafeMutablePointer<GError>?
        guard gst_webrtc_data_channel_send_string_full(pointer, text, &error) == 0 else { return }
        let message = error.map { String(cString: $0.pointee.message) } ?? "not sent"
        if let error { g_error_free(error) }
        throw .webrtc("data channel '\(label)': \(message)")
    }

    /// Closes the channel (`gst_webrtc_data_channel_close`); `.closed` follows.
    public func close() {
        gst_webrtc_data_channel_close(pointer)
    }

    /// What signal handlers reach; retained once per connection, released by GLib's destroy
    /// notify, so a handler running during deinit never sees freed memory.
    private final class Sink: Sendable {
        let continuation: AsyncStream<Event>.Continuation
        private let opened = Atomic(false)
        init(_ c: AsyncStream<Event>.Continuation) { continuation = c }
        /// `.open` once, whether `on-open` or the wrapper saw it first.
        func reportOpen() {
            if !opened.exchange(true, ordering: .relaxed) { continuation.yield(.open) }
        }
        static func from(_ data: UnsafeMutableRawPointer?) -> Sink { Unmanaged<Sink>.fromOpaque(data!).takeUnretainedValue() }
    }

    private func connectSignals() {
        typealias NoArg = @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> Void
        typealias Text = @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<gchar>?, UnsafeMutableRawPointer?) -> Void
        typealias Failure = @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<GError>?, UnsafeMutableRawPointer?) -> Void

        let open: NoArg = { _, data in Sink.from(data).reportOpen() }
        let close: NoArg = { _, data in
            let c = Sink.from(data).continuation
            c.yield(.closed)
            c.finish()
        }
        let text: Text = { _, text, data in
            guard let text else { return }
            Sink.from(data).continuation.yield(.text(String(cString: text)))
        }
        let failure: Failure = { _, error, data in
            let message = error.map { String(cString: $0.pointee.message) } ?? "unknown error"
            Sink.from(data).continuation.yield(.failed(message))
        }
        let release: GClosureNotify = { data, _ in if let data { Unmanaged<Sink>.fromOpaque(data).release() } }
        let object = UnsafeMutableRawPointer(pointer)
        func connect(_ signal: String, _ handler: GCallback) -> SignalConnection {
            SignalConnection(object: object, signal: signal, handler: handler, data: Unmanaged.passRetained(sink).toOpaque(), release: release)
        }
        connections = [
            connect("on-open", unsafeBitCast(open, to: GCallback.self)),
            connect("on-message-string", unsafeBitCast(text, to: GCallback.self)),
            connect("on-error", unsafeBitCast(failure, to: GCallback.self)),
            connect("on-close", unsafeBitCast(close, to: GCallback.self)),
        ]
    }
}
