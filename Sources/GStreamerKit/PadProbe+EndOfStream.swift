internal import CGStreamer

extension Pad {
    /// Drops end-of-stream on this pad (`GST_PAD_PROBE_DROP` on the EOS event), other events
    /// pass. Before webrtcbin: its bundle funnel (`rtpfunnel`) goes EOS with the first track that
    /// ends, and every packet of the other track after that fails the push (`not-linked`-like
    /// `error`), which stopped a file whose video lagged its audio ("multiqueue1: Internal data
    /// stream error").
    public func dropEndOfStream() -> PadProbe {
        let id = gst_pad_add_probe(pointer, GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM, { _, info, _ in
            guard let info, let event = gst_pad_probe_info_get_event(info) else { return GST_PAD_PROBE_OK }
            return event.pointee.type == GST_EVENT_EOS ? GST_PAD_PROBE_DROP : GST_PAD_PROBE_OK
        }, nil, nil)
        return PadProbe(pad: self, id: id)
    }
}
