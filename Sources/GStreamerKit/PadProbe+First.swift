internal import CGStreamer
internal import CGStreamerShims

private final class FirstBufferBox: Sendable {
    let handler: @Sendable (UnsafeMutablePointer<GstPad>, UnsafeMutablePointer<GstBuffer>) -> Void
    init(_ h: @escaping @Sendable (UnsafeMutablePointer<GstPad>, UnsafeMutablePointer<GstBuffer>) -> Void) { handler = h }
}

extension Pad {
    /// Calls `handler` with the first buffer's bytes to pass this pad, then removes itself
    /// (no cost per buffer after that). It lives as long as the pad if no buffer ever comes.
    public func onFirstBuffer(_ handler: @escaping @Sendable (UnsafeRawBufferPointer) -> Void) {
        onFirst { _, buffer in
            var map = GstMapInfo()
            guard gst_buffer_map(buffer, &map, GST_MAP_READ) != 0 else { return }
            handler(UnsafeRawBufferPointer(start: map.data, count: Int(map.size)))
            gst_buffer_unmap(buffer, &map)
        }
    }

    /// Calls `handler` once, with how long before now the first buffer to pass this pad was
    /// due by its own time stamp (its running time against the element's clock), then removes
    /// itself. A receive path that holds its first packets (lip sync) stamps them with their
    /// arrival: this says how long they were held. Not called for a buffer without a time.
    public func onFirstBufferAge(_ handler: @escaping @Sendable (Duration) -> Void) {
        onFirst { pad, buffer in
            let ns = sfb_pad_buffer_age(pad, buffer)
            if ns >= 0 { handler(.nanoseconds(ns)) }
        }
    }

    /// `body` with the first buffer to pass this pad, on its streaming thread; then the probe goes.
    private func onFirst(_ body: @escaping @Sendable (UnsafeMutablePointer<GstPad>, UnsafeMutablePointer<GstBuffer>) -> Void) {
        let box = Unmanaged.passRetained(FirstBufferBox(body)).toOpaque()
        gst_pad_add_probe(pointer, GST_PAD_PROBE_TYPE_BUFFER, { pad, info, data in
            guard let pad, let info, let data, let buffer = sfb_probe_info_buffer(info) else { return GST_PAD_PROBE_OK }
            Unmanaged<FirstBufferBox>.fromOpaque(data).takeUnretainedValue().handler(pad, buffer)
            return GST_PAD_PROBE_REMOVE
        }, box, { data in
            if let data { Unmanaged<FirstBufferBox>.fromOpaque(data).release() }
        })
    }
}
