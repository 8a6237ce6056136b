internal import CGStreamer
internal import CGStreamerShims
import Synchronization
import Locking

/// A probe on a pad; removing it (or dropping the last reference) detaches it.
public final class PadProbe: Sendable {
    private let pad: Pad
    private let id: Locked<gulong>
    /// Probes on other pads that work with this one and go with it (a hold's end-of-stream).
    private let companions: [PadProbe]

    init(pad: Pad, id: gulong, companions: [PadProbe] = []) {
        self.pad = pad
        self.id = Locked(id)
        self.companions = companions
    }

    /// Detaches the probe; later calls do nothing.
    public func remove() {
        let current = id.withLock { id in defer { id = 0 }; return id }
        if current != 0 { gst_pad_remove_probe(pad.pointer, current) }
        for c in companions { c.remove() }
    }

    deinit { remove() }
}

private final class TransformBox: Sendable {
    let transform: any FrameTransform
    let droppedLists = Atomic<Int>(0)
    init(_ t: any FrameTransform) { transform = t }
}

private final class TimedObserverBox: Sendable {
    let observe: @Sendable (UnsafeRawBufferPointer, Double?) -> Void
    init(_ o: @escaping @Sendable (UnsafeRawBufferPointer, Double?) -> Void) { observe = o }
}

extension Pad {
    /// Runs `transform` on every buffer leaving (src pad) or entering (sink pad) this pad,
    /// replacing each buffer with the transform's output or dropping it. Buffer lists are
    /// dropped whole, so nothing bypasses the transform (fail closed).
    ///
    /// Per frame this allocates one GstBuffer of the output's capacity and nothing else.
    public func addFrameTransform(_ transform: any FrameTransform) -> PadProbe {
        let box = Unmanaged.passRetained(TransformBox(transform)).toOpaque()
        let mask = GstPadProbeType(rawValue: GST_PAD_PROBE_TYPE_BUFFER.rawValue | GST_PAD_PROBE_TYPE_BUFFER_LIST.rawValue)
        let id = gst_pad_add_probe(pointer, mask, { _, info, data in
            guard let info, let data else { return GST_PAD_PROBE_OK }
            let box = Unmanaged<TransformBox>.fromOpaque(data).takeUnretainedValue()
            guard info.pointee.type.rawValue & GST_PAD_PROBE_TYPE_BUFFER.rawValue != 0,
                  let input = sfb_probe_info_buffer(info) else {
                box.droppedLists.add(1, ordering: .relaxed)
                return GST_PAD_PROBE_DROP
            }
            guard let output = Pad.runTransform(box.transform, on: input) else { return GST_PAD_PROBE_DROP }
            sfb_probe_info_replace_buffer(info, output)
            return GST_PAD_PROBE_OK
        }, box, { data in
            if let data { Unmanaged<TransformBox>.fromOpaque(data).release() }
        })
        return PadProbe(pad: self, id: id)
    }

    /// Calls `observe` with every buffer's bytes passing this pad, unchanged (for taps in tests
    /// and diagnostics).
    public func addBufferObserver(_ observe: @escaping @Sendable (UnsafeRawBufferPointer) -> Void) -> PadProbe {
        addTimedBufferObserver { bytes, _ in observe(bytes) }
    }

    /// Calls `observe` with every buffer's bytes and presentation time in seconds (nil if
    /// it has none), unchanged.
    public func addTimedBufferObserver(_ observe: @escaping @Sendable (UnsafeRawBufferPointer, Double?) -> Void) -> PadProbe {
        let box = Unmanaged.passRetained(TimedObserverBox(observe)).toOpaque()
        let id = gst_pad_add_probe(pointer, GST_PAD_PROBE_TYPE_BUFFER, { _, info, data in
            guard let info, let data, let buffer = sfb_probe_info_buffer(info) else { return GST_PAD_PROBE_OK }
            let box = Unmanaged<TimedObserverBox>.fromOpaque(data).takeUnretainedValue()
            var map = GstMapInfo()
            guard gst_buffer_map(buffer, &map, GST_MAP_READ) != 0 else { return GST_PAD_PROBE_OK }
            let pts = buffer.pointee.pts
            box.observe(UnsafeRawBufferPointer(start: map.data, count: Int(map.size)), pts == UInt.max ? nil : Double(pts) / 1e9)
            gst_buffer_unmap(buffer, &map)
            return GST_PAD_PROBE_OK
        }, box, { data in
            if let data { Unmanaged<TimedObserverBox>.fromOpaque(data).release() }
        })
        return PadProbe(pad: self, id: id)
    }

    /// One output buffer with the input's timestamps and flags, or nil to drop.
    private static func runTransform(_ t: any FrameTransform, on input: UnsafeMutablePointer<GstBuffer>) -> UnsafeMutablePointer<GstBuffer>? {
        var inMap = GstMapInfo()
        guard gst_buffer_map(input, &inMap, GST_MAP_READ) != 0 else { return nil }
        defer { gst_buffer_unmap(input, &inMap) }
        let inBytes = UnsafeRawBufferPointer(start: inMap.data, count: Int(inMap.size))
        let capacity = max(0, t.outputCapacity(for: inBytes))
        guard let output = gst_buffer_new_allocate(nil, gsize(capacity), nil) else { return nil }
        var outMap = GstMapInfo()
        guard gst_buffer_map(output, &outMap, GST_MAP_WRITE) != 0 else {
            gst_mini_object_unref(UnsafeMutableRawPointer(output).assumingMemoryBound(to: GstMiniObject.self))
            return nil
        }
        let written = t.transform(inBytes, into: UnsafeMutableRawBufferPointer(start: outMap.data, count: capacity))
        gst_buffer_unmap(output, &outMap)
        guard let written, written <= capacity else {
            gst_mini_object_unref(UnsafeMutableRawPointer(output).assumingMemoryBound(to: GstMiniObject.self))
            return nil
        }
        if written < capacity { gst_buffer_set_size(output, gssize(written)) }
        // Timestamps, duration, offsets and flags (keyframe/delta) travel with the frame.
        let copyFlags = GstBufferCopyFlags(rawValue: GST_BUFFER_COPY_FLAGS.rawValue | GST_BUFFER_COPY_TIMESTAMPS.rawValue | GST_BUFFER_COPY_META.rawValue)
        gst_buffer_copy_into(output, input, copyFlags, 0, gsize.max)  // size -1: the whole buffer
        return output
    }
}

private final class EventBox: Sendable {
    let handler: @Sendable () -> Void
    init(_ h: @escaping @Sendable () -> Void) { handler = h }
}

extension Pad {
    /// Calls `handler` when end-of-stream passes this pad (e.g. a file sink finished writing).
    public func onEndOfStream(_ handler: @escaping @Sendable () -> Void) -> PadProbe {
        let box = Unmanaged.passRetained(EventBox(handler)).toOpaque()
        let id = gst_pad_add_probe(pointer, GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM, { _, info, data in
            guard let info, let data, let event = gst_pad_probe_info_get_event(info) else { return GST_PAD_PROBE_OK }
            if event.pointee.type == GST_EVENT_EOS { Unmanaged<EventBox>.fromOpaque(data).takeUnretainedValue().handler() }
            return GST_PAD_PROBE_OK
        }, box, { data in
            if let data { Unmanaged<EventBox>.fromOpaque(data).release() }
        })
        return PadProbe(pad: self, id: id)
    }
}

extension Pad {
    /// Drops every buffer on this pad while the probe is attached; upstream sees success, so a
    /// shared receive path is not stopped by one finished branch.
    public func addDropProbe() -> PadProbe {
        let id = gst_pad_add_probe(pointer, GstPadProbeType(rawValue: GST_PAD_PROBE_TYPE_BUFFER.rawValue | GST_PAD_PROBE_TYPE_BUFFER_LIST.rawValue),
                                   { _, _, _ in GST_PAD_PROBE_DROP }, nil, nil)
        return PadProbe(pad: self, id: id)
    }
}

/// Drops buffers until opened; opening waits for the next flush to pass, so buffers from
/// before a flushing seek never get through. Flush events always stop here: nothing after
/// the gate is ever flushed.
public final class Gate: Sendable {
    fileprivate static let closed = 0, armed = 1, open = 2
    fileprivate let state = Atomic<Int>(Gate.closed)
    fileprivate let droppedCount = Atomic<Int>(0)
    /// Buffers dropped while closed.
    public var dropped: Int { droppedCount.load(ordering: .relaxed) }

    /// Lets buffers through from now on (live sources, which are never sought back).
    public func open() { state.store(Gate.open, ordering: .sequentiallyConsistent) }

    /// Lets buffers through from the end of the next flush on.
    public func openAfterNextFlush() { state.store(Gate.armed, ordering: .sequentiallyConsistent) }
    public var isOpen: Bool { state.load(ordering: .sequentiallyConsistent) == Gate.open }
}

extension Pad {
    public func addGate() -> (Gate, PadProbe) {
        let gate = Gate()
        let box = Unmanaged.passRetained(gate).toOpaque()
        let mask = GST_PAD_PROBE_TYPE_BUFFER.rawValue | GST_PAD_PROBE_TYPE_BUFFER_LIST.rawValue | GST_PAD_PROBE_TYPE_EVENT_FLUSH.rawValue
        let id = gst_pad_add_probe(pointer, GstPadProbeType(rawValue: mask), { _, info, data in
            guard let info, let data else { return GST_PAD_PROBE_OK }
            let gate = Unmanaged<Gate>.fromOpaque(data).takeUnretainedValue()
            if info.pointee.type.rawValue & GST_PAD_PROBE_TYPE_EVENT_FLUSH.rawValue != 0 {
                if let e = gst_pad_probe_info_get_event(info), e.pointee.type == GST_EVENT_FLUSH_STOP {
                    _ = gate.state.compareExchange(expected: Gate.armed, desired: Gate.open, ordering: .sequentiallyConsistent)
                }
                return GST_PAD_PROBE_DROP
            }
            if gate.state.load(ordering: .sequentiallyConsistent) == Gate.open { return GST_PAD_PROBE_OK }
            gate.droppedCount.add(1, ordering: .relaxed)
            return GST_PAD_PROBE_DROP
        }, box, { data in
            if let data { Unmanaged<Gate>.fromOpaque(data).release() }
        })
        return (gate, PadProbe(pad: self, id: id))
    }

    /// Sends a seek upstream from this (sink) pad to the start of `position`, e.g. to restart
    /// a file source without touching anything downstream. With `segment`, the end of the
    /// file posts segment-done instead of EOS.
    @discardableResult
    public func seekUpstream(to position: Double = 0, flush: Bool, segment: Bool) -> Bool {
        var flags = GST_SEEK_FLAG_NONE.rawValue
        if flush { flags |= GST_SEEK_FLAG_FLUSH.rawValue }
        if segment { flags |= GST_SEEK_FLAG_SEGMENT.rawValue }
        let event = gst_event_new_seek(1.0, GST_FORMAT_TIME, GstSeekFlags(rawValue: flags),
                                       GST_SEEK_TYPE_SET, gint64(position * 1e9), GST_SEEK_TYPE_NONE, -1)
        // push_event on a sink pad sends an upstream event to its peer.
        return gst_pad_push_event(pointer, event) != 0
    }
}

extension Pad {
    /// Drops buffers flagged as delta units until the first keyframe passes, so a recording
    /// starts on a picture that decodes. With `isKeyFrame` the bytes decide, not the flag
    /// (h264parse left the flag off a P frame that followed frames dropped before it).
    public func addKeyFrameStart(isKeyFrame: (@Sendable (UnsafeRawBufferPointer) -> Bool)? = nil) -> PadProbe {
        let started = Unmanaged.passRetained(StartGate(isKeyFrame)).toOpaque()
        let id = gst_pad_add_probe(pointer, GST_PAD_PROBE_TYPE_BUFFER, { _, info, data in
            guard let info, let data, let buffer = sfb_probe_info_buffer(info) else { return GST_PAD_PROBE_OK }
            let start = Unmanaged<StartGate>.fromOpaque(data).takeUnretainedValue()
            if start.gate.isOpen { return GST_PAD_PROBE_OK }
            if let isKeyFrame = start.isKeyFrame {
                var map = GstMapInfo()
                guard gst_buffer_map(buffer, &map, GST_MAP_READ) != 0 else { return GST_PAD_PROBE_DROP }
                let key = isKeyFrame(UnsafeRawBufferPointer(start: map.data, count: Int(map.size)))
                gst_buffer_unmap(buffer, &map)
                if !key { return GST_PAD_PROBE_DROP }
            } else if buffer.pointee.mini_object.flags & GST_BUFFER_FLAG_DELTA_UNIT.rawValue != 0 {
                return GST_PAD_PROBE_DROP
            }
            start.gate.open()
            return GST_PAD_PROBE_OK
        }, started, { data in
            if let data { Unmanaged<StartGate>.fromOpaque(data).release() }
        })
        return PadProbe(pad: self, id: id)
    }
}

private final class StartGate: Sendable {
    let gate = Gate()
    let isKeyFrame: (@Sendable (UnsafeRawBufferPointer) -> Bool)?
    init(_ isKeyFrame: (@Sendable (UnsafeRawBufferPointer) -> Bool)?) { self.isKeyFrame = isKeyFrame }
}

private final class CapsBox: Sendable {
    let handler: @Sendable (String) -> Void
    init(_ h: @escaping @Sendable (String) -> Void) { handler = h }
}

extension Pad {
    /// Calls `handler` with the caps of every caps event leaving this (src) pad, on the
    /// streaming thread and before the event goes on. The handler may link this pad to a new
    /// peer: GStreamer then sends the new peer the sticky events (stream-start) before this
    /// one, and this caps event goes to the new peer.
    public func beforeCaps(_ handler: @escaping @Sendable (String) -> Void) -> PadProbe {
        let box = Unmanaged.passRetained(CapsBox(handler)).toOpaque()
        let id = gst_pad_add_probe(pointer, GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM, { _, info, data in
            guard let info, let data, let event = gst_pad_probe_info_get_event(info), event.pointee.type == GST_EVENT_CAPS else { return GST_PAD_PROBE_OK }
            var caps: UnsafeMutablePointer<GstCaps>?
            gst_event_parse_caps(event, &caps)
            guard let caps, let text = takeGString(gst_caps_to_string(caps)) else { return GST_PAD_PROBE_OK }
            Unmanaged<CapsBox>.fromOpaque(data).takeUnretainedValue().handler(text)
            return GST_PAD_PROBE_OK
        }, box, { data in
            if let data { Unmanaged<CapsBox>.fromOpaque(data).release() }
        })
        return PadProbe(pad: self, id: id)
    }
}
