import Glibc

/// H.264 NAL unit helpers: Annex-B scanning and the start-code rules sealed slices must keep.
public enum NALUnits {
    /// NAL unit types ECall encrypts: non-IDR slice (1) and IDR slice (5).
    public static func isSlice(_ header: UInt8) -> Bool {
        let type = header & 0x1F
        return type == 1 || type == 5
    }

    /// The NAL units of an Annex-B byte stream (start codes `00 00 01` / `00 00 00 01`
    /// removed), as ranges into `stream`. Trailing zero bytes before a start code belong to
    /// the start code, as in the H.264 byte-stream format.
    public static func annexB(_ stream: UnsafeRawBufferPointer) -> [Range<Int>] {
        var units: [Range<Int>] = []
        var start: Int? = nil
        var i = 0
        let n = stream.count
        while i + 2 < n {
            if stream[i] == 0, stream[i + 1] == 0, stream[i + 2] == 1 {
                if let s = start {
                    var end = i
                    while end > s, stream[end - 1] == 0 { end -= 1 }
                    if end > s { units.append(s..<end) }
                }
                i += 3
                start = i
            } else {
                i += 1
            }
        }
        if let s = start, s < n {
            var end = n
            while end > s, stream[end - 1] == 0 { end -= 1 }
            if end > s { units.append(s..<end) }
        }
        return units
    }

    /// Whether `bytes` could be cut by an Annex-B parser: it holds `00 00 00` or `00 00 01`,
    /// or ends in `00` (which a parser takes as part of the next start code).
    public static func breaksAnnexB(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let base = bytes.baseAddress, let last = bytes.last else { return false }
        if last == 0 { return true }
        // Ciphertext has a zero byte every ~256 bytes: find zeros with memchr (vectorized)
        // and look at their neighbours only.
        let n = bytes.count
        var i = 0
        while i + 2 < n, let hit = memchr(base + i, 0, n - 2 - i) {
            let z = base.distance(to: UnsafeRawPointer(hit))
            if bytes[z + 1] == 0, bytes[z + 2] <= 1 { return true }
            i = z + 1
        }
        return false
    }
}
