import Glibc

/// The H.264 byte rules of FrameCryptor (libwebrtc `H264::WriteRbsp`/`ParseRbsp`, and how its
/// clear header is found) over our length-prefixed access units.
///
/// libwebrtc transforms Annex-B frames. Our pipelines carry `stream-format=avc` (4-byte
/// lengths), and a 4-byte length takes the place of a 4-byte start code `00 00 00 01`, the
/// form libwebrtc's depacketizer rebuilds: so the clear header libwebrtc authenticates is
/// the AU's bytes up to the first slice's third byte with each length read as a start code.
enum FrameCryptorH264 {
    /// Where the first slice NAL unit (type 1 or 5) of an access unit lies.
    struct FirstSlice {
        /// Offset of its 4-byte length: the bytes before it are the clear NAL units.
        var prefix: Int
        /// Its NAL unit bytes (after the length).
        var nal: Range<Int>
    }

    /// Walks the NAL units of a length-prefixed AU; nil if the lengths do not describe the
    /// buffer exactly (or a NAL unit is empty). Otherwise the first slice, if any.
    static func firstSlice(_ au: UnsafeRawBufferPointer) -> (slice: FirstSlice?, valid: Bool) {
        var at = 0
        var found: FirstSlice? = nil
        while at < au.count {
            guard au.count - at >= 5 else { return (nil, false) }
            let length = Int(au[at]) << 24 | Int(au[at + 1]) << 16 | Int(au[at + 2]) << 8 | Int(au[at + 3])
            guard length > 0, length <= au.count - at - 4 else { return (nil, false) }
            if found == nil, NALUnits.isSlice(au[at + 4]) { found = FirstSlice(prefix: at, nal: at + 4..<at + 4 + length) }
            at += 4 + length
        }
        return (found, true)
    }

    /// Calls `body` with each NAL unit (offset of its length, its bytes) of a valid AU.
    static func forEachNAL(_ au: UnsafeRawBufferPointer, upTo end: Int, _ body: (Int, Range<Int>) -> Void) {
        var at = 0
        while at < end {
            let length = Int(au[at]) << 24 | Int(au[at + 1]) << 16 | Int(au[at + 2]) << 8 | Int(au[at + 3])
            body(at, at + 4..<at + 4 + length)
            at += 4 + length
        }
    }

    static func isSEI(_ header: UInt8) -> Bool { header & 0x1F == 6 }

    static func storeLength(_ length: Int, at p: UnsafeMutableRawPointer) {
        p.storeBytes(of: UInt32(length).bigEndian, as: UInt32.self)
    }

    /// The emulation bytes `WriteRbsp` would insert into `bytes`, and whether any lands among
    /// the last `tail` bytes (FrameCryptor's IV and trailer, which receivers of older
    /// libwebrtc read before unescaping).
    static func escapes(_ bytes: UnsafeRawBufferPointer, tail: Int) -> (count: Int, inTail: Bool) {
        var zeros = 0, count = 0, inTail = false
        let tailStart = bytes.count - tail
        for i in 0..<bytes.count {
            let b = bytes[i]
            if b <= 3, zeros >= 2 {
                count += 1
                zeros = 0
                if i >= tailStart { inTail = true }
            }
            zeros = b == 0 ? zeros + 1 : 0
        }
        return (count, inTail)
    }

    /// `WriteRbsp`: copies `count` bytes from `source` to `destination`, inserting 0x03 after
    /// two zeros before any byte ≤ 3. Forward-safe in place when `destination` is at least
    /// the number of inserted bytes before `source`. Returns the bytes written.
    static func escape(_ source: UnsafeRawPointer, count: Int, to destination: UnsafeMutableRawPointer) -> Int {
        var zeros = 0, w = 0
        for i in 0..<count {
            let b = source.load(fromByteOffset: i, as: UInt8.self)  // read before any write at or past it
            if b <= 3, zeros >= 2 {
                destination.storeBytes(of: 3, toByteOffset: w, as: UInt8.self)
                w += 1
                zeros = 0
            }
            destination.storeBytes(of: b, toByteOffset: w, as: UInt8.self)
            w += 1
            zeros = b == 0 ? zeros + 1 : 0
        }
        return w
    }

    /// `ParseRbsp`: copies `source` to `destination` dropping the 0x03 of every `00 00 03`.
    /// Safe in place (`destination <= source`). Returns the bytes written.
    static func unescape(_ source: UnsafeRawBufferPointer, to destination: UnsafeMutableRawPointer) -> Int {
        let n = source.count
        var i = 0, w = 0
        while i < n {
            if n - i >= 3, source[i] == 0, source[i + 1] == 0, source[i + 2] == 3 {
                destination.storeBytes(of: 0, toByteOffset: w, as: UInt8.self)
                destination.storeBytes(of: 0, toByteOffset: w + 1, as: UInt8.self)
                w += 2
                i += 3
            } else {
                destination.storeBytes(of: source[i], toByteOffset: w, as: UInt8.self)
                w += 1
                i += 1
            }
        }
        return w
    }

    /// Start codes (`00 00 01`) in `bytes`: each may cost one byte when rewritten as a length.
    static func startCodes(_ bytes: UnsafeRawBufferPointer) -> Int {
        var count = 0, i = 0
        while i + 2 < bytes.count {
            if bytes[i + 2] > 1 { i += 3; continue }
            if bytes[i] == 0, bytes[i + 1] == 0, bytes[i + 2] == 1 { count += 1; i += 3 } else { i += 1 }
        }
        return count
    }

    /// Rewrites a decrypted Annex-B tail at `tail` (its first piece continues the NAL unit whose
    /// length sits at `lengthAt`, already `written` bytes long, ending at `to`) as
    /// length-prefixed NAL units from `to`. As libwebrtc's `FindNaluIndices`, one zero byte
    /// before `00 00 01` makes a 4-byte start code and the last NAL unit keeps its trailing
    /// zeros (a sealed slice ends in key index 0 more often than not). Needs
    /// `tail - to >= startCodes(tail)`. Returns the end offset.
    static func annexBToAVC(_ out: UnsafeMutableRawPointer, tail: Int, count: Int, lengthAt: Int, written: Int, to: Int) -> Int {
        let t = UnsafeRawBufferPointer(start: out + tail, count: count)
        var w = to, lengthPosition = lengthAt, nalStart = w - written
        var segment = 0, i = 0
        func finish(_ end: Int, beforeStartCode: Bool) {
            var e = end
            if beforeStartCode, e > segment, t[e - 1] == 0 { e -= 1 }  // a 4-byte start code
            let n = e - segment
            if n > 0 { memmove(out + w, out + tail + segment, n) }
            w += n
            if w == nalStart { w -= 4 } else { storeLength(w - nalStart, at: out + lengthPosition) }
        }
        while i + 2 < count {
            if t[i + 2] > 1 { i += 3; continue }
            guard t[i] == 0, t[i + 1] == 0, t[i + 2] == 1 else { i += 1; continue }
            finish(i, beforeStartCode: true)
            lengthPosition = w
            w += 4
            nalStart = w
            i += 3
            segment = i
        }
        finish(count, beforeStartCode: false)
        return w
    }
}
