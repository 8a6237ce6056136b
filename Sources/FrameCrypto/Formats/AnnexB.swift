/// H.264 access units between the two forms: Annex-B (start codes, as encoders, libwebrtc's
/// encoded transforms and captures have them) and length-prefixed (4-byte big-endian lengths,
/// `stream-format=avc`, as the pipelines carry them around the frame transform).
public enum AnnexB {
    /// The NAL units of an Annex-B buffer, each without its start code (3 or 4 bytes); a buffer
    /// without a start code is one NAL unit. Bytes between start codes are kept as they are.
    public static func units(_ bytes: some RandomAccessCollection<UInt8>) -> [ArraySlice<UInt8>] {
        let b = Array(bytes)
        var starts = [(code: Int, payload: Int)]()
        var i = 0
        while i + 2 < b.count {
            if b[i] == 0, b[i + 1] == 0, b[i + 2] == 1 {
                let code = i > 0 && b[i - 1] == 0 ? i - 1 : i
                starts.append((code, i + 3))
                i += 3
            } else {
                i += 1
            }
        }
        guard !starts.isEmpty else { return b.isEmpty ? [] : [b[...]] }
        return starts.indices.compactMap { k in
            let end = k + 1 < starts.count ? starts[k + 1].code : b.count
            let unit = b[starts[k].payload..<max(starts[k].payload, end)]
            return unit.isEmpty ? nil : unit
        }
    }

    /// Whether an Annex-B access unit holds an IDR slice (a keyframe).
    public static func containsIDR(_ bytes: UnsafeRawBufferPointer) -> Bool {
        units(bytes).contains { $0.first.map { $0 & 0x1F == 5 } ?? false }
    }

    /// Annex-B to 4-byte length prefixes.
    public static func toLengthPrefixed(_ bytes: [UInt8]) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(bytes.count + 16)
        for unit in units(bytes) {
            let n = unit.count
            out += [UInt8(truncatingIfNeeded: n >> 24), UInt8(truncatingIfNeeded: n >> 16), UInt8(truncatingIfNeeded: n >> 8), UInt8(truncatingIfNeeded: n)]
            out += unit
        }
        return out
    }

    /// 4-byte length prefixes to Annex-B with 4-byte start codes, as libwebrtc's depacketizer
    /// writes them. A buffer whose prefixes do not tile it is returned as it is.
    public static func fromLengthPrefixed(_ bytes: [UInt8]) -> [UInt8] {
        var out = [UInt8]()
        var i = 0
        while i + 4 <= bytes.count {
            let n = Int(bytes[i]) << 24 | Int(bytes[i + 1]) << 16 | Int(bytes[i + 2]) << 8 | Int(bytes[i + 3])
            guard n > 0, n <= bytes.count - i - 4 else { return bytes }
            out += [0, 0, 0, 1]
            out += bytes[(i + 4)..<(i + 4 + n)]
            i += 4 + n
        }
        return i == bytes.count ? out : bytes
    }
}
