/// The ECall video transform (ECALL-WIRE §3) on H.264 access units: in every slice NAL unit
/// (types 1 and 5) the header byte and the next byte stay clear, the rest is sealed as
/// `nonce(12) ‖ ciphertext ‖ tag(16)`; every other NAL unit (SPS, PPS, SEI, AUD, …) is
/// copied as is.
///
/// Access units are length-prefixed (`stream-format=avc`, 4-byte big-endian lengths), the form
/// GStreamer's payloader needs once slices are encrypted; the NAL bytes are those an ECall
/// phone sees after Annex-B parsing, because sealing never produces a start code.
///
/// libwebrtc reads first_mb_in_slice, slice_type and pic_parameter_set_id from every slice
/// before decrypting; where they run past the clear byte, sealing copies the plaintext's bits
/// into the nonce's first bits (`NoncePin`) so phones and browsers do not drop our keyframes.
/// Opening takes any nonce, pinned or not.
public enum VideoFrame {
    /// Bytes sealing adds to one slice.
    public static let sliceOverhead = 28
    /// Clear bytes at the start of a sealed slice.
    static let clearCount = 2
    /// Re-seals before giving up on a slice (a try fails Annex-B safety with p ≈ L/2^23).
    static let maxSealTries = 64

    /// An upper bound of the sealed size of an access unit: its size plus the overhead of
    /// every slice. Nil if the length prefixes do not describe the buffer exactly.
    public static func sealedCapacity(_ au: UnsafeRawBufferPointer, lengthSize: Int = 4) -> Int? {
        var extra = 0
        let ok = forEachNAL(au, lengthSize: lengthSize) { nal in
            if NALUnits.isSlice(nal[nal.startIndex]) { extra += sliceOverhead }
            return true
        }
        return ok ? au.count + extra : nil
    }

    /// Seals every slice of a length-prefixed access unit into `output` (see `sealedCapacity`)
    /// and returns the bytes written. Each slice gets fresh nonces until its sealed bytes hold
    /// no start code. Fails (and the caller drops the frame) rather than emit a clear slice.
    public static func seal(
        _ au: UnsafeRawBufferPointer, lengthSize: Int = 4, key: CallKey, into output: UnsafeMutableRawBufferPointer
    ) throws(FrameError) -> Int {
        var written = 0
        var failure: FrameError? = nil
        let parsed = forEachNAL(au, lengthSize: lengthSize) { nal in
            let isSlice = NALUnits.isSlice(nal[nal.startIndex])
            // A slice too short to keep its two clear bytes is malformed: drop, never pass it clear.
            guard !isSlice || nal.count >= clearCount else { failure = .sealFailed; return false }
            let sealedCount = isSlice ? nal.count + sliceOverhead : nal.count
            guard written + lengthSize + sealedCount <= output.count else { failure = .outputTooSmall; return false }
            writeLength(sealedCount, size: lengthSize, at: output.baseAddress! + written)
            let dst = UnsafeMutableRawBufferPointer(start: output.baseAddress! + written + lengthSize, count: sealedCount)
            if sealedCount == nal.count {
                dst.copyMemory(from: UnsafeRawBufferPointer(rebasing: nal))
            } else if !sealSlice(UnsafeRawBufferPointer(rebasing: nal), key: key, into: dst) {
                failure = .sealFailed
                return false
            }
            written += lengthSize + sealedCount
            return true
        }
        if let failure { throw failure }
        guard parsed else { throw .sealFailed }
        return written
    }

    /// Opens every slice of a length-prefixed access unit into `output` (at least the input's
    /// size). If any slice fails with every key the whole frame is dropped.
    public static func open(
        _ au: UnsafeRawBufferPointer, lengthSize: Int = 4, keys: KeyRing.Candidates, into output: UnsafeMutableRawBufferPointer
    ) throws(DropReason) -> Int {
        var written = 0
        var failure: DropReason? = nil
        let parsed = forEachNAL(au, lengthSize: lengthSize) { nal in
            let header = nal[nal.startIndex]
            guard NALUnits.isSlice(header) else {
                guard written + lengthSize + nal.count <= output.count else { failure = .malformed; return false }
                writeLength(nal.count, size: lengthSize, at: output.baseAddress! + written)
                UnsafeMutableRawBufferPointer(start: output.baseAddress! + written + lengthSize, count: nal.count)
                    .copyMemory(from: UnsafeRawBufferPointer(rebasing: nal))
                written += lengthSize + nal.count
                return true
            }
            guard nal.count >= clearCount + sliceOverhead else { failure = .tooShort; return false }
            let plainCount = nal.count - sliceOverhead
            guard written + lengthSize + plainCount <= output.count else { failure = .malformed; return false }
            writeLength(plainCount, size: lengthSize, at: output.baseAddress! + written)
            let dst = UnsafeMutableRawBufferPointer(start: output.baseAddress! + written + lengthSize, count: plainCount)
            guard openSlice(UnsafeRawBufferPointer(rebasing: nal), keys: keys, into: dst) else { failure = .noKey; return false }
            written += lengthSize + plainCount
            return true
        }
        if let failure { throw failure }
        guard parsed else { throw .malformed }
        return written
    }

    /// Whether a length-prefixed access unit holds an IDR slice (a keyframe).
    public static func containsIDR(_ au: UnsafeRawBufferPointer, lengthSize: Int = 4) -> Bool {
        var idr = false
        _ = forEachNAL(au, lengthSize: lengthSize) { nal in
            idr = nal[nal.startIndex] & 0x1F == 5
            return !idr
        }
        return idr
    }

    /// One slice: clear header bytes, then nonce ‖ ciphertext ‖ tag, re-sealed until start-code
    /// safe and until the slice-header fields libwebrtc reads before decrypting come out as in
    /// the plaintext (see `NoncePin`).
    static func sealSlice(_ nal: UnsafeRawBufferPointer, key: CallKey, into dst: UnsafeMutableRawBufferPointer) -> Bool {
        let base = dst.baseAddress!
        base.copyMemory(from: nal.baseAddress!, byteCount: clearCount)
        let plain = UnsafeRawBufferPointer(rebasing: nal[clearCount...])
        let nonce = base + clearCount
        let body = UnsafeRawBufferPointer(start: base + 1, count: dst.count - 1)  // from the clear 2nd byte on
        let pin = NoncePin(slice: nal)
        return key.pool.withCipher { cipher in
            for _ in 0..<maxSealTries {
                guard cipher.nextNonce(into: nonce) else { return false }
                pin?.apply(to: nonce)
                guard cipher.seal(nonce: nonce, plain, ciphertext: nonce + 12, tag: base + (dst.count - 16)) else { return false }
                // The body check spans the clear byte and the (pinned) nonce, so a start code
                // formed across them (e.g. clear 00, nonce 00 01) is re-sealed too.
                if !NALUnits.breaksAnnexB(body), pin?.holds(inSealed: body) ?? true { return true }
            }
            return false
        } == true
    }

    static func openSlice(_ nal: UnsafeRawBufferPointer, keys: KeyRing.Candidates, into dst: UnsafeMutableRawBufferPointer) -> Bool {
        let base = nal.baseAddress!
        dst.baseAddress!.copyMemory(from: base, byteCount: clearCount)
        let nonce = base + clearCount
        let ciphertext = UnsafeRawBufferPointer(start: nonce + 12, count: nal.count - sliceOverhead - clearCount)
        let tag = base + (nal.count - 16)
        let plain = dst.baseAddress! + clearCount
        func attempt(_ key: CallKey?) -> Bool {
            key?.pool.withCipher { $0.open(nonce: nonce, ciphertext, tag: tag, plaintext: plain) } == true
        }
        return attempt(keys.current) || attempt(keys.backup) || attempt(keys.future)
    }

    /// Calls `body` with each NAL unit (without its length prefix); false if the prefixes do
    /// not tile the buffer exactly (truncated or garbage input) or `body` stopped.
    static func forEachNAL(_ au: UnsafeRawBufferPointer, lengthSize: Int, _ body: (Slice<UnsafeRawBufferPointer>) -> Bool) -> Bool {
        guard (1...4).contains(lengthSize) else { return false }
        var i = 0
        while i < au.count {
            guard i + lengthSize <= au.count else { return false }
            var length = 0
            for k in 0..<lengthSize { length = length << 8 | Int(au[i + k]) }
            i += lengthSize
            guard length > 0, length <= au.count - i else { return false }
            guard body(au[i..<(i + length)]) else { return false }
            i += length
        }
        return true
    }

    static func writeLength(_ n: Int, size: Int, at p: UnsafeMutableRawPointer) {
        for k in 0..<size { p.storeBytes(of: UInt8(truncatingIfNeeded: n >> (8 * (size - 1 - k))), toByteOffset: k, as: UInt8.self) }
    }
}
