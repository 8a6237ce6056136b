internal import CGStreamer

/// An `appsrc` in a pipeline that Swift code feeds with whole encoded frames (a file the bot
/// reads itself, such as a Janus `.mjr` recording). Pushing blocks while the element's queue
/// is full (`block=true` in the description), and returns false once the pipeline is
/// flushing or stopped, so a producer loop ends when the pipeline goes to NULL.
public final class AppSource: @unchecked Sendable {
    // @unchecked: gst_app_src_push_buffer and end_of_stream are thread-safe.
    private let element: Element
    private var appsrc: UnsafeMutablePointer<GstAppSrc> {
        UnsafeMutableRawPointer(element.pointer).assumingMemoryBound(to: GstAppSrc.self)
    }

    /// `name` must be an `appsrc` of `bin`.
    public init(named name: String, in bin: Bin) throws(GStreamerError) {
        let e = try bin.element(named: name)
        guard let factory = gst_element_get_factory(e.pointer),
              objectName(UnsafeMutableRawPointer(factory).assumingMemoryBound(to: GstObject.self)) == "appsrc"
        else { throw .parse("element '\(name)' is not an appsrc") }
        element = e
    }

    /// Copies `bytes` into a new buffer stamped `pts` (and `dts`, the same: no reordering)
    /// in nanoseconds and pushes it. `delta` marks a frame that is not a keyframe.
    @discardableResult
    public func push(_ bytes: UnsafeRawBufferPointer, pts: UInt64, delta: Bool = false) -> Bool {
        guard let buffer = gst_buffer_new_allocate(nil, gsize(bytes.count), nil) else { return false }
        if let base = bytes.baseAddress, bytes.count > 0 { _ = gst_buffer_fill(buffer, 0, base, gsize(bytes.count)) }
        buffer.pointee.pts = GstClockTime(pts)
        buffer.pointee.dts = GstClockTime(pts)
        if delta { buffer.pointee.mini_object.flags |= GST_BUFFER_FLAG_DELTA_UNIT.rawValue }
        // push_buffer takes the buffer's reference.
        return gst_app_src_push_buffer(appsrc, buffer) == GST_FLOW_OK
    }

    /// Buffers waiting in the element's queue now (pushed, not yet taken by its thread).
    public var queuedBuffers: Int { Int(gst_app_src_get_current_level_buffers(appsrc)) }

    /// The element's source pad: what leaves its queue.
    public func sourcePad() throws(GStreamerError) -> Pad { try element.staticPad("src") }

    /// No more buffers: downstream finishes its file when every source has said so.
    public func endOfStream() { _ = gst_app_src_end_of_stream(appsrc) }
}
