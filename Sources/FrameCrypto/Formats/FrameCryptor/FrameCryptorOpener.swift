/// Opens frames sealed in libwebrtc's FrameCryptor layout (see `FrameCryptorSealer`), as
/// libwebrtc's `FrameCryptorTransformer::decryptFrame` does: the key index byte picks the
/// key, the current key and then up to `ratchetWindow` ratchet steps of it are tried, and a
/// step that opens becomes the key. A frame ending in the magic bytes is never taken as media.
public enum FrameCryptorOpener {
    /// Bytes `open` may need in its output (video: room to rewrite start codes as lengths).
    public static func openedCapacity(_ frame: UnsafeRawBufferPointer, kind: MediaKind) -> Int {
        kind == .audio ? frame.count : frame.count + frame.count / 3 + 8
    }

    /// The key index a frame names, without opening it; nil if it is too short to be sealed,
    /// ends in the magic bytes or does not end in FrameCryptor's trailer. Lets a receiver wait
    /// for a key it lacks. (Escaping never changes the last two bytes: the byte before the key
    /// index is 12, so no emulation byte goes before it.)
    public static func keyIndex(of frame: UnsafeRawBufferPointer, options: FrameCryptorOptions) -> UInt8? {
        guard frame.count >= 1 + FrameCryptorSealer.overhead, !endsInMagic(frame, options),
              frame[frame.count - 2] == FrameCryptorSealer.ivCount else { return nil }
        return frame[frame.count - 1]
    }

    /// Opens `frame` into `output` (see `openedCapacity`; must not overlap `frame`). `key`
    /// gives the key this participant has at an index, nil if none (yet). On failure `output`
    /// may hold garbage and must not be used. The first frame a key's current material does
    /// not open derives its ratchet window here (~0.5 s of PBKDF2, once per key) unless
    /// `FrameCryptorKey.deriveRatchetWindow()` ran before; later frames only try AES-GCM.
    public static func open(
        _ frame: UnsafeRawBufferPointer, kind: MediaKind, options: FrameCryptorOptions,
        key: (UInt8) -> FrameCryptorKey?, into output: UnsafeMutableRawBufferPointer
    ) throws(DropReason) -> OpenedFrame {
        guard !frame.isEmpty else { throw .tooShort }
        if endsInMagic(frame, options) { throw .unencrypted }
        switch kind {
        case .audio: return try openAudio(frame, options: options, key: key, into: output)
        case .video: return try openVideo(frame, options: options, key: key, into: output)
        }
    }

    static func endsInMagic(_ frame: UnsafeRawBufferPointer, _ options: FrameCryptorOptions) -> Bool {
        let magic = options.magicBytes
        guard !magic.isEmpty, frame.count >= magic.count else { return false }
        return frame[(frame.count - magic.count)...].elementsEqual(magic)
    }

    /// The trailer's checks, in libwebrtc's order; the key for the frame's index.
    private static func check(
        _ raw: UnsafeRawBufferPointer, options: FrameCryptorOptions, key: (UInt8) -> FrameCryptorKey?
    ) throws(DropReason) -> (FrameCryptorKey, UInt8) {
        guard raw.count >= 2 else { throw .tooShort }
        guard raw[raw.count - 2] == FrameCryptorSealer.ivCount else { throw .malformed }
        guard raw.count >= FrameCryptorSealer.overhead else { throw .tooShort }
        let index = raw[raw.count - 1]
        guard Int(index) < options.keyRingSize, let k = key(index) else { throw .missingKey }
        return (k, index)
    }

    private static func openAudio(
        _ frame: UnsafeRawBufferPointer, options: FrameCryptorOptions, key: (UInt8) -> FrameCryptorKey?,
        into output: UnsafeMutableRawBufferPointer
    ) throws(DropReason) -> OpenedFrame {
        let raw = UnsafeRawBufferPointer(rebasing: frame[1...])
        let (k, index) = try check(raw, options: options, key: key)
        let n = raw.count - FrameCryptorSealer.overhead
        guard output.count >= 1 + n, let out = output.baseAddress else { throw .tooShort }
        let input = raw.baseAddress!
        let header = UnsafeRawBufferPointer(start: frame.baseAddress, count: 1)
        let opened = k.open { pool in
            pool.withCipher {
                $0.open(iv: input + n + FrameCryptorSealer.tagCount, aad: header, input: input, count: n,
                        tag: input + n, output: out + 1)
            } == true
        }
        guard opened != nil else { throw .noKey }
        out.storeBytes(of: frame[0], as: UInt8.self)
        return OpenedFrame(count: 1 + n, keyIndex: UInt64(index))
    }

    private static func openVideo(
        _ au: UnsafeRawBufferPointer, options: FrameCryptorOptions, key: (UInt8) -> FrameCryptorKey?,
        into output: UnsafeMutableRawBufferPointer
    ) throws(DropReason) -> OpenedFrame {
        let (found, valid) = FrameCryptorH264.firstSlice(au)
        guard valid else { throw .malformed }
        // The sealed part is one NAL unit (escaping leaves no start code in it), the first slice,
        // and the last one; its first two bytes are clear. libwebrtc's header length is one byte.
        guard let slice = found, slice.nal.upperBound == au.count, slice.prefix + 6 <= 255 else { throw .malformed }
        guard slice.nal.count >= 2 + 2 else { throw .tooShort }
        let escaped = UnsafeRawBufferPointer(rebasing: au[(slice.nal.lowerBound + 2)...])
        guard let out = output.baseAddress, output.count >= au.count else { throw .tooShort }
        let raw = output.count - escaped.count
        var rawCount = FrameCryptorH264.unescape(escaped, to: out + raw)
        let (k, index) = try check(UnsafeRawBufferPointer(start: out + raw, count: rawCount), options: options, key: key)
        let tailCount = rawCount - FrameCryptorSealer.overhead
        let base = slice.prefix + 6
        let input = au.baseAddress!
        var dirty = false
        let opened = withUnsafeTemporaryAllocation(byteCount: 256, alignment: 1) { aad in
            let aadCount = FrameCryptorSealer.annexBHeader(input, clear: slice.prefix, into: aad.baseAddress!)
            return k.open { pool in
                // Decryption writes over the ciphertext: unescape it again for each further try.
                if dirty { rawCount = FrameCryptorH264.unescape(escaped, to: out + raw) }
                dirty = true
                return pool.withCipher {
                    $0.open(iv: out + raw + tailCount + FrameCryptorSealer.tagCount,
                            aad: UnsafeRawBufferPointer(start: aad.baseAddress, count: aadCount),
                            input: out + raw, count: tailCount, tag: out + raw + tailCount, output: out + raw)
                } == true
            }
        }
        guard opened != nil else { throw .noKey }
        let tail = UnsafeRawBufferPointer(start: out + raw, count: tailCount)
        guard raw - base >= FrameCryptorH264.startCodes(tail) else { throw .tooShort }
        out.copyMemory(from: input, byteCount: base)
        let end = FrameCryptorH264.annexBToAVC(out, tail: raw, count: tailCount, lengthAt: slice.prefix, written: 2, to: base)
        return OpenedFrame(count: end, keyIndex: UInt64(index))
    }
}
