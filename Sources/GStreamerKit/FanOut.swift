internal import CGStreamer
internal import CGStreamerShims
import Synchronization
import Locking

/// A source pad that belongs to no element, linked to a sink pad in another pipeline: a
/// `FanOut` pushes shared buffers through it, in the fan-out's own streaming thread, with no
/// queue and no thread of its own.
public final class Outlet: @unchecked Sendable {
    // @unchecked: GstPad pushing and linking are thread-safe; the counters are atomics.
    let pointer: UnsafeMutablePointer<GstPad>
    private let peer: Pad
    /// Buffers pushed, and pushes downstream refused (flushing, not linked, error).
    let pushedCount = Atomic<Int>(0)
    let refusedCount = Atomic<Int>(0)
    public var pushed: Int { pushedCount.load(ordering: .relaxed) }
    public var refused: Int { refusedCount.load(ordering: .relaxed) }

    /// Links a new pad to `sink` and sends it the stream's sticky events (stream-start,
    /// `caps`, and the segment of `fanOut`'s source), so the element behind `sink` can
    /// negotiate before the first buffer arrives, and reads the buffers' timestamps as the
    /// source meant them (x264enc, for one, shifts its segment by 1000 hours).
    public init(to sink: Pad, caps: String, streamID: String, from fanOut: FanOut) throws(GStreamerError) {
        GStreamer.initialize()
        guard let p = gst_pad_new("outlet", GST_PAD_SRC) else { throw .linkFailed("cannot create a pad") }
        gst_object_ref_sink(UnsafeMutableRawPointer(p))
        pointer = p
        peer = sink
        gst_pad_set_active(p, 1)
        let r = gst_pad_link(p, sink.pointer)
        guard r == GST_PAD_LINK_OK else {
            throw .linkFailed("outlet → \(sink.name): \(String(cString: gst_pad_link_get_name(r)))")
        }
        guard let c = gst_caps_from_string(caps) else { throw .parse("bad caps: \(caps)") }
        let segmentEvent: UnsafeMutablePointer<GstEvent>
        if let sticky = gst_pad_get_sticky_event(fanOut.source.pointer, GST_EVENT_SEGMENT, 0) {
            segmentEvent = sticky
        } else {
            var segment = GstSegment()
            gst_segment_init(&segment, GST_FORMAT_TIME)
            segmentEvent = gst_event_new_segment(&segment)
        }
        guard gst_pad_push_event(p, gst_event_new_stream_start(streamID)) != 0,
              gst_pad_push_event(p, gst_event_new_caps(c)) != 0,
              gst_pad_push_event(p, segmentEvent) != 0 else {
            gst_mini_object_unref(UnsafeMutableRawPointer(c).assumingMemoryBound(to: GstMiniObject.self))
            throw .linkFailed("\(sink.name) refused the stream's caps \(caps)")
        }
        gst_mini_object_unref(UnsafeMutableRawPointer(c).assumingMemoryBound(to: GstMiniObject.self))
    }

    deinit {
        gst_pad_unlink(pointer, peer.pointer)
        gst_pad_set_active(pointer, 0)
        gst_object_unref(UnsafeMutableRawPointer(pointer))
    }

    /// Pushes one more reference to `buffer`; the caller keeps its own.
    @inline(__always) func push(_ buffer: UnsafeMutablePointer<GstBuffer>) {
        let ref = gst_mini_object_ref(UnsafeMutableRawPointer(buffer).assumingMemoryBound(to: GstMiniObject.self))
        let r = gst_pad_push(pointer, UnsafeMutableRawPointer(ref!).assumingMemoryBound(to: GstBuffer.self))
        if r == GST_FLOW_OK { pushedCount.add(1, ordering: .relaxed) } else { refusedCount.add(1, ordering: .relaxed) }
    }
}

/// Takes a fan-out's frames itself, in the fan-out's thread, instead of through a pad: `consume`
/// gets each frame's bytes, its running time (ns, `UInt64.max` if it has none) and the fan-out's
/// scratch memory (for a sealed copy). Meant for senders that packetize in C (FastPath).
public final class FrameConsumer: Sendable {
    let consume: @Sendable (UnsafeRawBufferPointer, UInt64, FrameScratch) -> Void
    public init(_ consume: @escaping @Sendable (UnsafeRawBufferPointer, UInt64, FrameScratch) -> Void) { self.consume = consume }
}

/// Memory a fan-out lends its consumers one at a time, grown to the largest asked for.
public final class FrameScratch: @unchecked Sendable {
    // @unchecked: used only in the fan-out's streaming thread, by one consumer at a time.
    private var memory = UnsafeMutableRawBufferPointer(start: nil, count: 0)
    init() {}
    deinit { memory.deallocate() }

    /// At least `count` bytes, valid until the consumer returns.
    public func bytes(_ count: Int) -> UnsafeMutableRawBufferPointer {
        if memory.count < count {
            memory.deallocate()
            memory = .allocate(byteCount: max(count, 2 * memory.count), alignment: 16)
        }
        return UnsafeMutableRawBufferPointer(rebasing: memory[0..<count])
    }
}

/// Media encoded once, sent by many: every buffer leaving `source` is pushed to each attached
/// outlet in turn (each gets a reference, not a copy) and given to each frame consumer, then
/// dropped. A transform on the far side (the seal) replaces the buffer, so outlets never see
/// each other's changes.
///
/// An outlet is pushed to only while attached: attach it once its peer can take data without
/// blocking (webrtcbin holds RTP until DTLS is up), or one slow peer stalls all.
public final class FanOut: Sendable {
    private struct Targets {
        var outlets: [Outlet] = []
        var consumers: [FrameConsumer] = []
    }
    private final class Outlets: Sendable {
        let list = Locked(Targets())
        let scratch = FrameScratch()
    }
    private let outlets = Outlets()
    private let probe: PadProbe
    /// Where the shared buffers come from (its sticky segment goes to each outlet).
    let source: Pad

    public init(source: Pad) {
        self.source = source
        let context = Unmanaged.passRetained(outlets).toOpaque()
        let id = gst_pad_add_probe(source.pointer, GST_PAD_PROBE_TYPE_BUFFER, { pad, info, data in
            guard let info, let data, let buffer = sfb_probe_info_buffer(info) else { return GST_PAD_PROBE_DROP }
            let outlets = Unmanaged<Outlets>.fromOpaque(data).takeUnretainedValue()
            // Held while pushing: attach/detach wait at most one round, and no outlet is
            // pushed to after `detach` returns.
            outlets.list.withLock { targets in
                for o in targets.outlets { o.push(buffer) }
                if !targets.consumers.isEmpty { FanOut.give(buffer, on: pad, to: targets.consumers, scratch: outlets.scratch) }
            }
            return GST_PAD_PROBE_DROP
        }, context, { data in
            if let data { Unmanaged<Outlets>.fromOpaque(data).release() }
        })
        probe = PadProbe(pad: source, id: id)
    }

    deinit { probe.remove() }

    /// The frame's bytes and running time (through the source's segment, as an outlet's peer
    /// reads it), to each consumer.
    private static func give(_ buffer: UnsafeMutablePointer<GstBuffer>, on pad: UnsafeMutablePointer<GstPad>?,
                             to consumers: [FrameConsumer], scratch: FrameScratch) {
        var running = UInt64.max
        let pts = buffer.pointee.pts
        if pts != UInt64.max, let pad, let event = gst_pad_get_sticky_event(pad, GST_EVENT_SEGMENT, 0) {
            var segment: UnsafePointer<GstSegment>?
            gst_event_parse_segment(event, &segment)
            if let segment { running = UInt64(gst_segment_to_running_time(segment, GST_FORMAT_TIME, pts)) }
            gst_mini_object_unref(UnsafeMutableRawPointer(event).assumingMemoryBound(to: GstMiniObject.self))
        }
        var map = GstMapInfo()
        guard gst_buffer_map(buffer, &map, GST_MAP_READ) != 0 else { return }
        let bytes = UnsafeRawBufferPointer(start: map.data, count: Int(map.size))
        for c in consumers { c.consume(bytes, running, scratch) }
        gst_buffer_unmap(buffer, &map)
    }

    public func attach(_ outlet: Outlet) { outlets.list.withLock { $0.outlets.append(outlet) } }

    public func detach(_ outlet: Outlet) { outlets.list.withLock { $0.outlets.removeAll { $0 === outlet } } }

    public func attach(_ consumer: FrameConsumer) { outlets.list.withLock { $0.consumers.append(consumer) } }

    public func detach(_ consumer: FrameConsumer) { outlets.list.withLock { $0.consumers.removeAll { $0 === consumer } } }

    public var count: Int { outlets.list.withLock { $0.outlets.count + $0.consumers.count } }
}
