internal import CGStreamer

extension Pad {
    /// Blocks the streaming thread at the first buffer to reach this pad until the probe is
    /// removed. Events still pass, so caps reach downstream (webrtcbin negotiates on them) while
    /// no data does: a source can wait for its peer without being sought back afterwards.
    /// A flush or a state change to NULL releases the block as well.
    public func addBufferHold() -> PadProbe {
        let mask = GST_PAD_PROBE_TYPE_BLOCK.rawValue | GST_PAD_PROBE_TYPE_BUFFER.rawValue | GST_PAD_PROBE_TYPE_BUFFER_LIST.rawValue
        let id = gst_pad_add_probe(pointer, GstPadProbeType(rawValue: mask), { _, _, _ in GST_PAD_PROBE_OK }, nil, nil)
        return PadProbe(pad: self, id: id)
    }
}
