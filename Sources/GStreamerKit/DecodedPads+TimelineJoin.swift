internal import CGStreamer
internal import CGStreamerShims
import Locking
import Synchronization

/// The join state shared by every pad of one decodebin, and how many restarts it joined.
public final class TimelineJoins: Sendable {
    let state = Locked(TimelineJoin())
    public init() {}
    /// Restarts joined since the last segment or flush.
    public var joined: Int { state.withLock { $0.joined } }
}

extension Element {
    /// Keeps the timestamps of every src pad this decodebin adds going forward across a restart
    /// of the file's timeline (`TimelineJoin`): each pad gets a probe that shifts buffers after a
    /// restart (PTS and DTS alike), before they reach a queue, a rate adapter or `clocksync`.
    /// A segment or flush on any pad (a seek, the player's start and loop seeks) starts over.
    public func joinRestartedTimelines(_ joins: TimelineJoins = TimelineJoins()) -> SignalConnection {
        typealias PadAdded = @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<GstPad>?, UnsafeMutableRawPointer?) -> Void
        let added: PadAdded = { _, pad, data in
            guard let pad, let data, gst_pad_get_direction(pad) == GST_PAD_SRC else { return }
            let box = Unmanaged<TimelineJoins>.fromOpaque(data).retain().toOpaque()
            let mask = GstPadProbeType(rawValue: GST_PAD_PROBE_TYPE_BUFFER.rawValue | GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM.rawValue)
            _ = gst_pad_add_probe(pad, mask, { pad, info, data in
                guard let pad, let info, let data else { return GST_PAD_PROBE_OK }
                let joins = Unmanaged<TimelineJoins>.fromOpaque(data).takeUnretainedValue()
                if info.pointee.type.rawValue & GST_PAD_PROBE_TYPE_BUFFER.rawValue == 0 {
                    if let event = gst_pad_probe_info_get_event(info), event.pointee.type == GST_EVENT_SEGMENT || event.pointee.type == GST_EVENT_FLUSH_STOP {
                        joins.state.withLock { $0.reset() }
                    }
                    return GST_PAD_PROBE_OK
                }
                guard let buffer = sfb_probe_info_buffer(info), buffer.pointee.pts != UInt.max else { return GST_PAD_PROBE_OK }
                let duration = buffer.pointee.duration
                let offset = joins.state.withLock {
                    $0.map(stream: Int(bitPattern: UInt(bitPattern: pad)), pts: UInt64(buffer.pointee.pts),
                           duration: duration == UInt.max ? nil : UInt64(duration))
                }
                guard offset != 0 else { return GST_PAD_PROBE_OK }
                let object = UnsafeMutableRawPointer(buffer).assumingMemoryBound(to: GstMiniObject.self)
                let target: UnsafeMutablePointer<GstBuffer>
                if gst_mini_object_is_writable(object) != 0 {
                    target = buffer
                } else {
                    guard let copy = gst_mini_object_copy(object) else { return GST_PAD_PROBE_OK }
                    target = UnsafeMutableRawPointer(copy).assumingMemoryBound(to: GstBuffer.self)
                    sfb_probe_info_replace_buffer(info, target)
                }
                target.pointee.pts = UInt(max(0, Int64(target.pointee.pts) + offset))
                if target.pointee.dts != UInt.max { target.pointee.dts = UInt(max(0, Int64(target.pointee.dts) + offset)) }
                return GST_PAD_PROBE_OK
            }, box, { data in
                if let data { Unmanaged<TimelineJoins>.fromOpaque(data).release() }
            })
        }
        let release: GClosureNotify = { data, _ in if let data { Unmanaged<TimelineJoins>.fromOpaque(data).release() } }
        return SignalConnection(self, signal: "pad-added", handler: unsafeBitCast(added, to: GCallback.self),
                                data: Unmanaged.passRetained(joins).toOpaque(), release: release)
    }
}
