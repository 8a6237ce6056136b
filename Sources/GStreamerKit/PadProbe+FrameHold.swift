internal import CGStreamer
internal import CGStreamerShims
import Locking
import Synchronization

/// A held frame: a deep copy (the original's memory may belong to an upstream pool that
/// wants it back), owned by the hold until it is settled.
private struct HeldBuffer: @unchecked Sendable {  // a GstBuffer reference, touched only under the hold's lock
    let pointer: UnsafeMutablePointer<GstBuffer>
}

/// The state of one `addHoldingFrameTransform`: the transform and the frames it holds.
private final class HoldBox: Sendable {
    let transform: any HoldingFrameTransform
    /// The pad frames leave by, where settled frames are pushed.
    let source: Pad
    private let held = Locked<[HeldBuffer]>([])
    /// How many frames are held: read per frame, so the lock is taken only while holding.
    private let count = Atomic<Int>(0)
    /// Set while settled frames are pushed: they pass the probe again, already transformed.
    let settling = Atomic<Bool>(false)
    let droppedLists = Atomic<Int>(0)

    init(_ transform: any HoldingFrameTransform, source: Pad) {
        self.transform = transform
        self.source = source
    }

    func hold(_ buffer: UnsafeMutablePointer<GstBuffer>) {
        held.withLock { $0.append(HeldBuffer(pointer: buffer)) }
        count.add(1, ordering: .relaxed)
    }

    private func take() -> [HeldBuffer] {
        guard count.load(ordering: .relaxed) > 0 else { return [] }
        count.store(0, ordering: .relaxed)
        return held.withLock { h in defer { h.removeAll() }; return h }
    }

    /// Tries each held frame again and pushes those that came out, in order, on the streaming
    /// thread (inside the probe of a later frame, or at end-of-stream before it goes on).
    func settle() {
        let frames = take()
        guard !frames.isEmpty else { return }
        settling.store(true, ordering: .relaxed)
        for f in frames {
            let out = Pad.apply(transform, to: f.pointer) { t, input, output in t.retry(input, into: output).map(FrameOutcome.output) ?? .drop }
            if case .buffer(let b) = out { _ = gst_pad_push(source.pointer, b) }
            gst_mini_object_unref(UnsafeMutableRawPointer(f.pointer).assumingMemoryBound(to: GstMiniObject.self))
        }
        settling.store(false, ordering: .relaxed)
        transform.settled(abandoned: 0)
    }

    /// Gives the held frames up untried (a flush; the probe removed).
    func abandon() {
        let frames = take()
        guard !frames.isEmpty else { return }
        for f in frames { gst_mini_object_unref(UnsafeMutableRawPointer(f.pointer).assumingMemoryBound(to: GstMiniObject.self)) }
        transform.settled(abandoned: frames.count)
    }

    deinit { abandon() }
}

extension Pad {
    fileprivate enum Applied { case buffer(UnsafeMutablePointer<GstBuffer>), drop, hold }

    /// Runs `body` on the input's bytes and a new buffer of the transform's capacity: the new
    /// buffer (with the input's timestamps, flags and metas) if it wrote one.
    fileprivate static func apply(_ t: any HoldingFrameTransform, to input: UnsafeMutablePointer<GstBuffer>,
                                  _ body: (any HoldingFrameTransform, UnsafeRawBufferPointer, UnsafeMutableRawBufferPointer) -> FrameOutcome) -> Applied {
        var inMap = GstMapInfo()
        guard gst_buffer_map(input, &inMap, GST_MAP_READ) != 0 else { return .drop }
        defer { gst_buffer_unmap(input, &inMap) }
        let inBytes = UnsafeRawBufferPointer(start: inMap.data, count: Int(inMap.size))
        let capacity = max(0, t.outputCapacity(for: inBytes))
        guard let output = gst_buffer_new_allocate(nil, gsize(capacity), nil) else { return .drop }
        let unref = { gst_mini_object_unref(UnsafeMutableRawPointer(output).assumingMemoryBound(to: GstMiniObject.self)) }
        var outMap = GstMapInfo()
        guard gst_buffer_map(output, &outMap, GST_MAP_WRITE) != 0 else { unref(); return .drop }
        let outcome = body(t, inBytes, UnsafeMutableRawBufferPointer(start: outMap.data, count: capacity))
        gst_buffer_unmap(output, &outMap)
        guard case .output(let written) = outcome, written >= 0, written <= capacity else {
            unref()
            return outcome == .hold ? .hold : .drop
        }
        if written < capacity { gst_buffer_set_size(output, gssize(written)) }
        let copyFlags = GstBufferCopyFlags(rawValue: GST_BUFFER_COPY_FLAGS.rawValue | GST_BUFFER_COPY_TIMESTAMPS.rawValue | GST_BUFFER_COPY_META.rawValue)
        gst_buffer_copy_into(output, input, copyFlags, 0, gsize.max)
        return .buffer(output)
    }

    /// Runs `transform` on every buffer leaving this source pad of a pass-through element
    /// (`identity`) whose sink pad is `sink`. A frame the transform holds is kept (a copy, with
    /// its timestamps) and dropped here; the next frame it does not hold first has the held
    /// ones tried again and pushed on this pad, in order, so every probe after this one and
    /// downstream sees them before that frame, as if they had just arrived. End-of-stream
    /// reaching `sink` settles them the same way before it goes on; a flush gives them up.
    /// Buffer lists are dropped whole (fail closed), as `addFrameTransform` does.
    ///
    /// Nothing blocks: the streaming thread (on the direct receive path, the PeerConnection's
    /// only one) goes on while frames are held.
    public func addHoldingFrameTransform(_ transform: any HoldingFrameTransform, sink: Pad) -> PadProbe {
        let box = HoldBox(transform, source: self)
        let mask = GstPadProbeType(rawValue: GST_PAD_PROBE_TYPE_BUFFER.rawValue | GST_PAD_PROBE_TYPE_BUFFER_LIST.rawValue)
        let id = gst_pad_add_probe(pointer, mask, { _, info, data in
            guard let info, let data else { return GST_PAD_PROBE_OK }
            let box = Unmanaged<HoldBox>.fromOpaque(data).takeUnretainedValue()
            if box.settling.load(ordering: .relaxed) { return GST_PAD_PROBE_OK }
            guard info.pointee.type.rawValue & GST_PAD_PROBE_TYPE_BUFFER.rawValue != 0, let input = sfb_probe_info_buffer(info) else {
                box.droppedLists.add(1, ordering: .relaxed)
                return GST_PAD_PROBE_DROP
            }
            switch Pad.apply(box.transform, to: input, { t, i, o in t.transform(i, into: o) }) {
            case .hold:
                guard let copy = gst_buffer_copy_deep(input) else { return GST_PAD_PROBE_DROP }
                box.hold(copy)
                return GST_PAD_PROBE_DROP
            case .drop:
                box.settle()
                return GST_PAD_PROBE_DROP
            case .buffer(let output):
                box.settle()
                sfb_probe_info_replace_buffer(info, output)
                return GST_PAD_PROBE_OK
            }
        }, Unmanaged.passRetained(box).toOpaque(), { data in
            if let data { Unmanaged<HoldBox>.fromOpaque(data).release() }
        })
        let eventMask = GstPadProbeType(rawValue: GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM.rawValue | GST_PAD_PROBE_TYPE_EVENT_FLUSH.rawValue)
        let endID = gst_pad_add_probe(sink.pointer, eventMask, { _, info, data in
            guard let info, let data, let event = gst_pad_probe_info_get_event(info) else { return GST_PAD_PROBE_OK }
            let box = Unmanaged<HoldBox>.fromOpaque(data).takeUnretainedValue()
            // On the sink pad: this source pad is not at end-of-stream yet, so the held frames can still go out.
            if event.pointee.type == GST_EVENT_EOS { box.settle() }
            if event.pointee.type == GST_EVENT_FLUSH_STOP { box.abandon() }
            return GST_PAD_PROBE_OK
        }, Unmanaged.passRetained(box).toOpaque(), { data in
            if let data { Unmanaged<HoldBox>.fromOpaque(data).release() }
        })
        return PadProbe(pad: self, id: id, companions: [PadProbe(pad: sink, id: endID)])
    }
}
