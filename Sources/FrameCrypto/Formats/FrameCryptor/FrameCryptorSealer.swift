import Synchronization

/// Seals the frames of one sending stream in libwebrtc's FrameCryptor layout:
/// `header ‖ AES-GCM(ciphertext ‖ tag) ‖ IV(12) ‖ 12 ‖ key index`, the header authenticated
/// as additional data. Audio: the header is the Opus TOC byte. H.264: the AU's NAL units up to
/// and including the first slice's first two bytes stay clear; the rest of the AU (later NAL
/// units with their start codes) is sealed, and what follows the header is RBSP-escaped into
/// that slice NAL unit so no start code appears (see `FrameCryptorH264`).
///
/// The IV: libwebrtc writes SSRC ‖ RTP timestamp ‖ a send count; receivers take the IV from the
/// frame, so any IV that never repeats under one key will do. Ours is a random 4-byte prefix
/// drawn per stream ‖ a 64-bit frame counter XORed with a random per-stream mask (an XOR with
/// a constant keeps counter values distinct, and keeps the long zero runs of a small counter
/// out of the IV, where escaping would insert bytes).
public final class FrameCryptorSealer: Sendable {
    public static let ivCount = 12
    public static let tagCount = 16
    /// IV, IV length and key index.
    static let trailerCount = ivCount + 2
    /// Bytes sealing adds before escaping.
    public static let overhead = tagCount + trailerCount
    /// Fresh IVs tried before a video frame is dropped (one fails with p ≈ 2^-15).
    static let maxTries = 16
    /// Slice-header bits past the clear byte a sender makes read as in the plaintext (expected
    /// tries: 2^bits; x264's IDR slices need 1).
    static let maxPinnedBits = 5
    static let maxPinnedTries = 256

    public let kind: MediaKind
    private let prefix: UInt32
    private let mask: UInt64
    private let counter = Atomic<UInt64>(0)

    public init(kind: MediaKind) {
        self.kind = kind
        prefix = UInt32.random(in: .min ... .max)
        mask = UInt64.random(in: .min ... .max)
    }

    /// Bytes `seal` may write for `frame` (video: with the worst case of escaping); nil if the
    /// frame cannot be sealed (empty, or an AU without a slice or with broken lengths).
    public func sealedCapacity(_ frame: UnsafeRawBufferPointer) -> Int? {
        switch kind {
        case .audio:
            return frame.isEmpty ? nil : frame.count + Self.overhead
        case .video:
            let (slice, valid) = FrameCryptorH264.firstSlice(frame)
            guard valid, let slice, slice.nal.count >= 2 else { return nil }
            let raw = frame.count + Self.overhead
            return raw + raw / 2  // WriteRbsp inserts at most one byte per two
        }
    }

    /// Seals `frame` with `key` into `output` (see `sealedCapacity`; must not overlap `frame`)
    /// and returns the bytes written; throws rather than ever emit a frame in the clear.
    /// `iv` is for known-answer tests only.
    public func seal(
        _ frame: UnsafeRawBufferPointer, key: FrameCryptorKey, keyIndex: UInt8,
        into output: UnsafeMutableRawBufferPointer, iv: [UInt8]? = nil
    ) throws(FrameError) -> Int {
        guard iv == nil || iv!.count == Self.ivCount else { throw .sealFailed }
        guard let input = frame.baseAddress, !frame.isEmpty else { throw .sealFailed }
        guard let out = output.baseAddress else { throw .outputTooSmall }
        let pool = key.sealPool
        switch kind {
        case .audio:
            let total = frame.count + Self.overhead
            guard output.count >= total else { throw .outputTooSmall }
            out.storeBytes(of: frame[0], as: UInt8.self)
            let n = frame.count - 1
            let ivAt = out + 1 + n + Self.tagCount
            writeIV(iv, to: ivAt)
            trailer(out + total - 2, keyIndex)
            let ok = pool.withCipher {
                $0.seal(iv: ivAt, aad: UnsafeRawBufferPointer(start: out, count: 1), input: input + 1, count: n,
                        output: out + 1, tag: out + 1 + n)
            }
            guard ok == true else { throw .sealFailed }
            return total
        case .video:
            return try sealVideo(frame, pool: pool, keyIndex: keyIndex, out: output, iv: iv)
        }
    }

    private func sealVideo(
        _ au: UnsafeRawBufferPointer, pool: AEADPool, keyIndex: UInt8, out output: UnsafeMutableRawBufferPointer, iv: [UInt8]?
    ) throws(FrameError) -> Int {
        let (found, valid) = FrameCryptorH264.firstSlice(au)
        guard valid, let slice = found, slice.nal.count >= 2 else { throw .sealFailed }
        let out = output.baseAddress!, input = au.baseAddress!
        // The clear NAL units, as is. libwebrtc keeps the header length in one byte: if they are
        // too long, the SEI units go (decoders need none of them), and if still too long the
        // frame cannot be sealed in this format.
        let dropSEI = slice.prefix + 6 > 255
        var clear = slice.prefix
        if dropSEI {
            clear = 0
            FrameCryptorH264.forEachNAL(au, upTo: slice.prefix) { _, nal in
                if !FrameCryptorH264.isSEI(au[nal.lowerBound]) { clear += 4 + nal.count }
            }
            guard clear + 6 <= 255 else { throw .sealFailed }
        }
        let tailCount = au.count - slice.nal.lowerBound - 2  // slice bytes 2... and later NAL units
        let rawCount = tailCount + Self.overhead
        let base = clear + 6
        guard output.count >= base + rawCount else { throw .outputTooSmall }
        var w = 0
        FrameCryptorH264.forEachNAL(au, upTo: slice.prefix) { at, nal in
            guard !dropSEI || !FrameCryptorH264.isSEI(au[nal.lowerBound]) else { return }
            (out + w).copyMemory(from: input + at, byteCount: 4 + nal.count)
            w += 4 + nal.count
        }
        (out + clear + 4).copyMemory(from: input + slice.nal.lowerBound, byteCount: 2)
        // libwebrtc reads first_mb_in_slice, slice_type and pic_parameter_set_id from every
        // slice before decrypting (`SliceHeaderPrefix`); only the slice's second byte is clear,
        // so where the fields run past it (x264's IDR: pps_id is the next bit) the IV is drawn
        // again until the ciphertext's leading bits read as the plaintext's. Beyond
        // `maxPinnedBits` the frame is sealed as is, as `NoncePin` does for ECall.
        let expected = SliceHeaderPrefix(UnsafeRawBufferPointer(rebasing: au[(slice.nal.lowerBound + 1)..<slice.nal.upperBound]))
        let pinned = expected.map { (1...Self.maxPinnedBits).contains($0.bitCount - 8) } ?? false
        // Sealed at the end of the output, then escaped forward to `base`.
        let raw = output.count - rawCount
        return try withUnsafeTemporaryAllocation(byteCount: 256, alignment: 1) { aad throws(FrameError) -> Int in
            let aadCount = Self.annexBHeader(out, clear: clear, into: aad.baseAddress!)
            for _ in 0..<(iv == nil ? (pinned ? Self.maxPinnedTries : Self.maxTries) : 1) {
                writeTail(au, slice: slice, to: out + raw)
                let ivAt = out + raw + tailCount + Self.tagCount
                writeIV(iv, to: ivAt)
                trailer(out + raw + rawCount - 2, keyIndex)
                let ok = pool.withCipher {
                    $0.seal(iv: ivAt, aad: UnsafeRawBufferPointer(start: aad.baseAddress, count: aadCount),
                            input: out + raw, count: tailCount, output: out + raw, tag: out + raw + tailCount)
                }
                guard ok == true else { throw .sealFailed }
                let sealed = UnsafeRawBufferPointer(start: out + raw, count: rawCount)
                let (escapes, inTail) = FrameCryptorH264.escapes(sealed, tail: Self.trailerCount)
                // A start code across the clear byte and the escaped bytes, which WriteRbsp
                // does not look at (libwebrtc would send it; it would cut the NAL unit).
                let seam = au[slice.nal.lowerBound + 1] == 0 && sealed[0] == 0 && sealed[1] <= 3
                guard !inTail, !seam else { continue }
                guard raw - base >= escapes else { throw .outputTooSmall }
                let n = FrameCryptorH264.escape(out + raw, count: rawCount, to: out + base)
                if pinned, iv == nil, SliceHeaderPrefix(UnsafeRawBufferPointer(start: out + clear + 5, count: 1 + n)) != expected { continue }
                FrameCryptorH264.storeLength(2 + n, at: out + clear)
                return base + n
            }
            throw .sealFailed
        }
    }

    /// The clear part as libwebrtc sees it (lengths read as 4-byte start codes) into `aad`.
    static func annexBHeader(_ avc: UnsafeRawPointer, clear: Int, into aad: UnsafeMutableRawPointer) -> Int {
        aad.copyMemory(from: avc, byteCount: clear + 6)
        let bytes = UnsafeRawBufferPointer(start: avc, count: clear)
        FrameCryptorH264.forEachNAL(bytes, upTo: clear) { at, _ in startCode(aad + at) }
        startCode(aad + clear)
        return clear + 6
    }

    private static func startCode(_ p: UnsafeMutableRawPointer) {
        p.storeBytes(of: UInt32(1).bigEndian, as: UInt32.self)
    }

    /// The bytes libwebrtc encrypts: the slice from its third byte, then each later NAL unit
    /// behind a 4-byte start code (same size as its length prefix).
    private func writeTail(_ au: UnsafeRawBufferPointer, slice: FrameCryptorH264.FirstSlice, to p: UnsafeMutableRawPointer) {
        let first = slice.nal.lowerBound + 2
        p.copyMemory(from: au.baseAddress! + first, byteCount: au.count - first)
        let rest = UnsafeRawBufferPointer(rebasing: au[slice.nal.upperBound...])
        FrameCryptorH264.forEachNAL(rest, upTo: rest.count) { at, _ in
            Self.startCode(p + (slice.nal.upperBound - first) + at)
        }
    }

    private func writeIV(_ fixed: [UInt8]?, to p: UnsafeMutableRawPointer) {
        if let fixed {
            fixed.withUnsafeBytes { p.copyMemory(from: $0.baseAddress!, byteCount: Self.ivCount) }
            return
        }
        let n = counter.add(1, ordering: .relaxed).oldValue
        p.storeBytes(of: prefix.bigEndian, as: UInt32.self)
        (p + 4).storeBytes(of: (n ^ mask).bigEndian, as: UInt64.self)
    }

    private func trailer(_ p: UnsafeMutableRawPointer, _ keyIndex: UInt8) {
        p.storeBytes(of: UInt8(Self.ivCount), as: UInt8.self)
        (p + 1).storeBytes(of: keyIndex, as: UInt8.self)
    }
}
