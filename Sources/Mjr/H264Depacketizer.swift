/// RFC 6184 packets of one access unit → the access unit with 4-byte length prefixes (the
/// form `VideoFrame.open` reads). Single NAL unit packets, STAP-A and FU-A (packetization
/// mode 1); anything else, or fragments that do not start, continue and end in order, makes
/// the access unit malformed.
struct H264Depacketizer {
    private(set) var bytes: [UInt8] = []

    /// Rebuilds the access unit from its payloads in order; false if they do not make one.
    mutating func build<S: Sequence<UnsafeRawBufferPointer>>(_ payloads: S) -> Bool {
        bytes.removeAll(keepingCapacity: true)
        var fragmentStart: Int? = nil  // where the open FU-A's length prefix is
        for p in payloads {
            guard let indicator = p.first else { return false }
            switch indicator & 0x1F {
            case 1...23:
                guard fragmentStart == nil else { return false }
                appendLength(p.count)
                bytes.append(contentsOf: p)
            case 24:  // STAP-A: [size 2][NAL] …
                guard fragmentStart == nil else { return false }
                var k = 1
                while k < p.count {
                    guard k + 2 <= p.count else { return false }
                    let size = Int(p[k]) << 8 | Int(p[k + 1])
                    k += 2
                    guard size > 0, k + size <= p.count else { return false }
                    appendLength(size)
                    bytes.append(contentsOf: p[k..<(k + size)])
                    k += size
                }
            case 28:  // FU-A: indicator, header (S E R type), fragment
                guard p.count > 2 else { return false }
                let header = p[1], isStart = header & 0x80 != 0, isEnd = header & 0x40 != 0
                if isStart {
                    guard fragmentStart == nil else { return false }
                    fragmentStart = bytes.count
                    appendLength(0)
                    bytes.append((indicator & 0xE0) | (header & 0x1F))
                } else {
                    guard fragmentStart != nil else { return false }
                }
                bytes.append(contentsOf: p[2...])
                if isEnd, let s = fragmentStart {
                    let n = bytes.count - s - 4
                    bytes[s] = UInt8(truncatingIfNeeded: n >> 24); bytes[s + 1] = UInt8(truncatingIfNeeded: n >> 16)
                    bytes[s + 2] = UInt8(truncatingIfNeeded: n >> 8); bytes[s + 3] = UInt8(truncatingIfNeeded: n)
                    fragmentStart = nil
                }
            default:
                return false
            }
        }
        return fragmentStart == nil && !bytes.isEmpty
    }

    private mutating func appendLength(_ n: Int) {
        bytes.append(UInt8(truncatingIfNeeded: n >> 24)); bytes.append(UInt8(truncatingIfNeeded: n >> 16))
        bytes.append(UInt8(truncatingIfNeeded: n >> 8)); bytes.append(UInt8(truncatingIfNeeded: n))
    }

    /// A length-prefixed access unit (prefixes known to tile it) as Annex-B: each 4-byte
    /// length becomes the 4-byte start code, so the size stays the same. Plaintext NAL units
    /// are escaped, so they hold no start code of their own.
    static func appendAnnexB(_ au: ArraySlice<UInt8>, to out: inout [UInt8]) {
        var i = au.startIndex
        while i + 4 <= au.endIndex {
            let n = Int(au[i]) << 24 | Int(au[i + 1]) << 16 | Int(au[i + 2]) << 8 | Int(au[i + 3])
            out.append(contentsOf: [0, 0, 0, 1])
            out.append(contentsOf: au[(i + 4)..<min(au.endIndex, i + 4 + n)])
            i += 4 + n
        }
    }
}
