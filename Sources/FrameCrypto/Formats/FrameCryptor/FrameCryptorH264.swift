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

    /// Calls `body` with the offset of each byte `WriteRbsp` puts an emulation byte before.
    /// It counts zeros and resets after an escape, so in a run of L zeros (from a non-zero
    /// byte or the start) the escapes go before its 3rd, 5th, … zero, and before the byte after
    /// the run if L is even and that byte is ≤ 3. Zeros are found with memchr: ciphertext
    /// has one every ~256 bytes, so this runs at memory speed instead of byte by byte.
    @inline(__always)
    static func forEachEscape(_ bytes: UnsafeRawBufferPointer, _ body: (Int) -> Void) {
        guard let base = bytes.baseAddress else { return }
        let n = bytes.count
        var i = 0
        while i < n, let hit = memchr(base + i, 0, n - i) {
            let z = base.distance(to: UnsafeRawPointer(hit))
            var e = z + 1
            while e < n, bytes[e] == 0 { e += 1 }
            var p = z + 2
            while p < e { body(p); p += 2 }
            if (e - z) % 2 == 0, e < n, bytes[e] <= 3 { body(e) }
            i = e
        }
    }

    /// The emulation bytes `WriteRbsp` would insert into `bytes`, and whether any lands among
    /// the last `tail` bytes (FrameCryptor's IV and trailer, which receivers of older
    /// libwebrtc read before unescaping).
    static func escapes(_ bytes: UnsafeRawBufferPointer, tail: Int) -> (count: Int, inTail: Bool) {
        var count = 0, inTail = false
        let tailStart = bytes.count - tail
        forEachEscape(bytes) { p in
            count += 1
            if p >= tailStart { inTail = true }
        }
        return (count, inTail)
    }

    /// `WriteRbsp`: copies `count` bytes from `source` to `destination`, inserting 0x03 after
    /// two zeros before any byte ≤ 3. Forward-safe in place when `destination` is at least
    /// the number of inserted bytes before `source`. Returns the bytes written.
    static func escape(_ source: UnsafeRawPointer, count: Int, to destination: UnsafeMutableRawPointer) -> Int {
        var read = 0, w = 0
        forEachEscape(UnsafeRawBufferPointer(start: source, count: count)) { p in
            memmove(destination + w, source + read, p - read)
            w += p - read
            destination.storeBytes(of: 3, toByteOffset: w, as: UInt8.self)
            w += 1
            read = p
        }
        memmove(destination + w, source + read, count - read)
        return w + count - read
    }

    /// `ParseRbsp`: copies `source` to `destination` dropping the 0x03 of every `00 00 03`
    /// (scanning left to right as it does, that is each 03 right after two zero bytes).
    /// Safe in place (`destination <= source`). Returns the bytes written.
    static func unescape(_ source: UnsafeRawBufferPointer, to destination: UnsafeMutableRawPointer) -> Int {
        guard let base = source.baseAddress else { return 0 }
        let n = source.count
        var i = 0, read = 0, w = 0
        while i + 2 < n, let hit = memchr(base + i, 0, n - 2 - i) {
            let z = base.distance(to: UnsafeRawPointer(hit))
            if source[z + 1] == 0, source[z + 2] == 3 {
                memmove(destination + w, base + read, z + 2 - read)
                w += z + 2 - read
                read = z + 3
                i = z + 3
            } else {
                i = z + 1
            }
        }
        memmove(destination + w, base + read, n - read)
        return w + n - read
    }

    /// The offset of the first start code (`00 00 01`) at or after `from`, found by looking
    /// for its 01 with memchr.
    static func nextStartCode(_ bytes: UnsafeRawBufferPointer, from: Int) -> Int? {
        guard let base = bytes.baseAddress else { return nil }
        var i = from + 2
        while i < bytes.count, let hit = memchr(base + i, 1, bytes.count - i) {
            let p = base.distance(to: UnsafeRawPointer(hit))
            if bytes[p - 1] == 0, bytes[p - 2] == 0 { return p - 2 }
            i = p + 1
        }
        return nil
    }

    /// Start codes in `bytes`: each may cost one byte when rewritten as a length.
    static func startCodes(_ bytes: UnsafeRawBufferPointer) -> Int {
        var count = 0, i = 0
        while let q = nextStartCode(bytes, from: i) { count += 1; i = q + 3 }
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
        while let q = nextStartCode(t, from: i) {
            finish(q, beforeStartCode: true)
            lengthPosition = w
            w += 4
            nalStart = w
            i = q + 3
            segment = i
        }
        finish(count, beforeStartCode: false)
        return w
    }
}
