internal import CGStreamer

/// What the pipeline reports, copied out of the GstMessage so it can cross threads.
public enum BusMessage: Sendable, CustomStringConvertible {
    case endOfStream(source: String)
    case error(source: String, message: String, debug: String?)
    case warning(source: String, message: String, debug: String?)
    case segmentDone(source: String)
    case stateChanged(source: String, from: String, to: String)
    case element(source: String, name: String)
    /// An element (or an aggregator's pad) dropped data: its running totals, in `format`'s
    /// units ("default" is samples for audio, frames for video).
    case qos(source: String, format: String, processed: UInt64, dropped: UInt64)
    case other(type: String, source: String)

    public var description: String {
        switch self {
        case .endOfStream(let s): "end of stream from \(s)"
        case .error(let s, let m, _): "error from \(s): \(m)"
        case .warning(let s, let m, _): "warning from \(s): \(m)"
        case .segmentDone(let s): "segment done from \(s)"
        case .stateChanged(let s, let a, let b): "\(s): \(a) → \(b)"
        case .element(let s, let n): "element message \(n) from \(s)"
        case .qos(let s, let f, let p, let d): "QoS from \(s): \(d) dropped, \(p) processed (\(f))"
        case .other(let t, let s): "\(t) from \(s)"
        }
    }
}

/// A pipeline's GstBus. Its messages are an `AsyncStream` fed by a sync handler: no polling
/// and no GMainLoop thread.
public final class Bus: @unchecked Sendable {
    // @unchecked: GstBus is thread-safe; `dispatch` is Sendable.
    let pointer: UnsafeMutablePointer<GstBus>
    private let dispatch: BusDispatch

    init(takingOwnership pointer: UnsafeMutablePointer<GstBus>, dispatch: BusDispatch) {
        self.pointer = pointer
        self.dispatch = dispatch
    }
    deinit { gst_object_unref(UnsafeMutableRawPointer(pointer)) }

    /// Every message not yet handed to a stream (including those posted before this call,
    /// oldest first), then each new one as it is posted. None is lost between streams or
    /// while one starts.
    ///
    /// One consumer at a time: starting a second stream finishes the first (messages already
    /// handed to it go with it). The stream ends when the pipeline is gone.
    public func messages() -> AsyncStream<BusMessage> { dispatch.messages() }

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
        case GST_MESSAGE_QOS:
            var format = GST_FORMAT_UNDEFINED
            var processed: guint64 = 0, dropped: guint64 = 0
            gst_message_parse_qos_stats(m, &format, &processed, &dropped)
            return .qos(source: source, format: String(cString: gst_format_get_name(format)), processed: UInt64(processed), dropped: UInt64(dropped))
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
