extension FrameCryptorOpener {
    /// Rewrites an Annex-B access unit (3- or 4-byte start codes) as length-prefixed NAL units
    /// (4-byte big-endian lengths) into `output` (at least `openedCapacity(frame, .video)`
    /// bytes, not overlapping `frame`); returns the bytes written, nil if `frame` does not start
    /// with a start code or `output` is too small.
    ///
    /// Why: GStreamer 1.22's `rtph264depay` with `stream-format=avc` output moves in-band SPS and
    /// PPS out of the access units into `codec_data`, but FrameCryptor authenticates them as part
    /// of a keyframe's clear header. With `stream-format=byte-stream,alignment=au` it keeps every
    /// NAL unit as received (a sealed slice holds no start code, so none is cut): receive that and
    /// convert here before `open`.
    public static func avc(fromAnnexB frame: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Int? {
        let n = frame.count
        guard let out = output.baseAddress, let input = frame.baseAddress else { return nil }
        var w = 0, nalStart = -1, i = 0
        // As libwebrtc's FindNaluIndices: one zero before `00 00 01` is a 4-byte start code's;
        // the last NAL unit keeps trailing zeros (a sealed slice often ends in key index 0).
        func finish(_ end: Int, beforeStartCode: Bool) -> Bool {
            guard nalStart >= 0 else { return true }
            var e = end
            if beforeStartCode, e > nalStart, frame[e - 1] == 0 { e -= 1 }
            guard e > nalStart else { return true }
            guard output.count - w >= 4 + e - nalStart else { return false }
            FrameCryptorH264.storeLength(e - nalStart, at: out + w)
            (out + w + 4).copyMemory(from: input + nalStart, byteCount: e - nalStart)
            w += 4 + e - nalStart
            return true
        }
        while let q = FrameCryptorH264.nextStartCode(frame, from: i) {
            if nalStart < 0, frame[..<q].contains(where: { $0 != 0 }) { return nil }
            guard finish(q, beforeStartCode: true) else { return nil }
            i = q + 3
            nalStart = i
        }
        guard nalStart >= 0, finish(n, beforeStartCode: false) else { return nil }
        return w
    }
}
