internal import CGStreamer
internal import CGStreamerShims

private final class RunningTimeBox: Sendable {
    let observe: @Sendable (UnsafeRawBufferPointer, UInt64?, Bool) -> Void
    init(_ o: @escaping @Sendable (UnsafeRawBufferPointer, UInt64?, Bool) -> Void) { observe = o }
}

extension Pad {
    /// Calls `observe` with every buffer's bytes, its running time in nanoseconds (its PTS
    /// through the pad's sticky segment, nil without either) and whether it is a keyframe (no
    /// `DELTA_UNIT` flag), unchanged. Running time, not PTS: the one timeline of every pad of a
    /// pipeline, whatever an element did to its segment (x264enc moves its own by 1000 hours).
    public func addRunningTimeObserver(_ observe: @escaping @Sendable (UnsafeRawBufferPointer, UInt64?, Bool) -> Void) -> PadProbe {
        let box = Unmanaged.passRetained(RunningTimeBox(observe)).toOpaque()
        let id = gst_pad_add_probe(pointer, GST_PAD_PROBE_TYPE_BUFFER, { pad, info, data in
            guard let pad, let info, let data, let buffer = sfb_probe_info_buffer(info) else { return GST_PAD_PROBE_OK }
            let box = Unmanaged<RunningTimeBox>.fromOpaque(data).takeUnretainedValue()
            var running: UInt64?
            let pts = buffer.pointee.pts
            if pts != UInt.max, let event = gst_pad_get_sticky_event(pad, GST_EVENT_SEGMENT, 0) {
                var segment: UnsafePointer<GstSegment>?
                gst_event_parse_segment(event, &segment)
                if let segment {
                    let t = gst_segment_to_running_time(segment, GST_FORMAT_TIME, pts)
                    if t != UInt.max { running = UInt64(t) }
                }
                gst_mini_object_unref(UnsafeMutableRawPointer(event).assumingMemoryBound(to: GstMiniObject.self))
            }
            let key = buffer.pointee.mini_object.flags & GST_BUFFER_FLAG_DELTA_UNIT.rawValue == 0
            var map = GstMapInfo()
            guard gst_buffer_map(buffer, &map, GST_MAP_READ) != 0 else { return GST_PAD_PROBE_OK }
            box.observe(UnsafeRawBufferPointer(start: map.data, count: Int(map.size)), running, key)
            gst_buffer_unmap(buffer, &map)
            return GST_PAD_PROBE_OK
        }, box, { data in
            if let data { Unmanaged<RunningTimeBox>.fromOpaque(data).release() }
        })
        return PadProbe(pad: self, id: id)
    }
}
