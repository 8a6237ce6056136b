internal import CGStreamer

/// What the pipeline reports, copied out of the GstMessage so it can cross threads.
public enum BusMessage: Sendable, CustomStringConvertible {
    case endOfStream(source: String)
    case error(source: String, message: String, debug: String?)
    case warning(source: String, message: String, debug: String?)
    case segmentDone(source: String)
    case stateChanged(source: String, from: String, to: String)
    case element(source: String, name: String)
    case other(type: String, source: String)

    public var description: String {
        switch self {
        case .endOfStream(let s): "end of stream from \(s)"
        case .error(let s, let m, _): "error from \(s): \(m)"
        case .warning(let s, let m, _): "warning from \(s): \(m)"
        case .segmentDone(let s): "segment done from \(s)"
        case .stateChanged(let s, let a, let b): "\(s): \(a) → \(b)"
        case .element(let s, let n): "element message \(n) from \(s)"
        case .other(let t, let s): "\(t) from \(s)"
        }
    }
}

/// Owns a GstBus. Its messages are an `AsyncStream` fed by a sync handler: no polling and no
/// GMainLoop thread.
public final class Bus: @unchecked Sendable {
    // @unchecked: GstBus is thread-safe; the handler box is only touched by GStreamer.
    let pointer: UnsafeMutablePointer<GstBus>

    init(takingOwnership pointer: UnsafeMutablePointer<GstBus>) { self.pointer = pointer }
    deinit { gst_object_unref(UnsafeMutableRawPointer(pointer)) }

    private final class Sink: Sendable {
        let continuation: AsyncStream<BusMessage>.Continuation
        init(_ c: AsyncStream<BusMessage>.Continuation) { continuation = c }
    }

    /// The bus's messages from now on, including any already queued. One consumer at a time:
    /// starting a second stream finishes the first. Ending the stream removes the handler.
    public func messages() -> AsyncStream<BusMessage> {
        let (stream, continuation) = AsyncStream.makeStream(of: BusMessage.self, bufferingPolicy: .bufferingNewest(4096))
        // Messages posted before the handler existed sit in the queue: deliver them first.
        while let m = gst_bus_pop(pointer) {
            continuation.yield(Self.convert(m))
            gst_mini_object_unref(UnsafeMutableRawPointer(m).assumingMemoryBound(to: GstMiniObject.self))
        }
        let sink = Unmanaged.passRetained(Sink(continuation)).toOpaque()
        gst_bus_set_sync_handler(pointer, { _, message, data in
            guard let message, let data else { return GST_BUS_PASS }
            let sink = Unmanaged<Sink>.fromOpaque(data).takeUnretainedValue()
            sink.continuation.yield(Bus.convert(message))
            return GST_BUS_DROP
        }, sink, { data in
            guard let data else { return }
            let sink = Unmanaged<Sink>.fromOpaque(data).takeRetainedValue()
            sink.continuation.finish()
        })
        let bus = UnsafeSendable(pointer)
        let owner = self
        continuation.onTermination = { _ in
            // Clearing the handler runs the destroy notify above, which releases the sink.
            withExtendedLifetime(owner) { gst_bus_set_sync_handler(bus.value, nil, nil, nil) }
        }
        return stream
    }

    static func convert(_ m: UnsafeMutablePointer<GstMessage>) -> BusMessage {
        let source = objectName(m.pointee.src)
        switch m.pointee.type {
        case GST_MESSAGE_EOS:
            return .endOfStream(source: source)
        case GST_MESSAGE_ERROR, GST_MESSAGE_WARNING:
            var err: UnsafeMutablePointer<GError>?
            var debug: UnsafeMutablePointer<gchar>?
            if m.pointee.type == GST_MESSAGE_ERROR { gst_message_parse_error(m, &err, &debug) } else { gst_message_parse_warning(m, &err, &debug) }
            let text = err.map { String(cString: $0.pointee.message) } ?? "unknown"
            if let err { g_error_free(err) }
            let d = takeGString(debug)
            return m.pointee.type == GST_MESSAGE_ERROR ? .error(source: source, message: text, debug: d) : .warning(source: source, message: text, debug: d)
        case GST_MESSAGE_SEGMENT_DONE:
            return .segmentDone(source: source)
        case GST_MESSAGE_STATE_CHANGED:
            var old = GST_STATE_VOID_PENDING, new = GST_STATE_VOID_PENDING
            gst_message_parse_state_changed(m, &old, &new, nil)
            return .stateChanged(source: source, from: String(cString: gst_element_state_get_name(old)), to: String(cString: gst_element_state_get_name(new)))
        case GST_MESSAGE_ELEMENT:
            let name = gst_message_get_structure(m).map { String(cString: gst_structure_get_name($0)) } ?? "?"
            return .element(source: source, name: name)
        default:
            return .other(type: String(cString: gst_message_type_get_name(m.pointee.type)), source: source)
        }
    }
}

/// Carries a C pointer into a `@Sendable` closure where GStreamer guarantees thread-safety.
struct UnsafeSendable<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}
