internal import CGStreamer

private final class KeyUnitBox: Sendable {
    let handler: @Sendable () -> Void
    let drop: Bool
    init(_ h: @escaping @Sendable () -> Void, drop: Bool) { handler = h; self.drop = drop }
}

extension Pad {
    /// Calls `handler` for every keyframe request (`GstForceKeyUnit`, the custom upstream event
    /// a depayloader with `request-keyframe=true` or `requestKeyFrame()` sends) passing this pad
    /// upstream, on the thread that sent it. With `drop` the request stops here: whoever
    /// installed the probe answers it another way (the recorder asks Janus by signalling, see
    /// `KeyFrameRequests`). Other events pass.
    public func onKeyUnitRequest(drop: Bool, _ handler: @escaping @Sendable () -> Void) -> PadProbe {
        let box = Unmanaged.passRetained(KeyUnitBox(handler, drop: drop)).toOpaque()
        let id = gst_pad_add_probe(pointer, GST_PAD_PROBE_TYPE_EVENT_UPSTREAM, { _, info, data in
            guard let info, let data, let event = gst_pad_probe_info_get_event(info), event.pointee.type == GST_EVENT_CUSTOM_UPSTREAM,
                  let structure = gst_event_get_structure(event), gst_structure_has_name(structure, "GstForceKeyUnit") != 0 else {
                return GST_PAD_PROBE_OK
            }
            let box = Unmanaged<KeyUnitBox>.fromOpaque(data).takeUnretainedValue()
            box.handler()
            return box.drop ? GST_PAD_PROBE_DROP : GST_PAD_PROBE_OK
        }, box, { data in
            if let data { Unmanaged<KeyUnitBox>.fromOpaque(data).release() }
        })
        return PadProbe(pad: self, id: id)
    }
}
