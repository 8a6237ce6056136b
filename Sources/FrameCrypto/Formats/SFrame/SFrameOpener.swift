/// Opens SFrame frames (RFC 9605 §4.4.4): the header's KID picks the key, its CTR the nonce.
public enum SFrameOpener {
    /// OpenSSL takes lengths as Int32; larger frames are refused, never truncated.
    static let maxFrameCount = 1 << 30
    /// The shortest tag of any suite (AES_128_CTR_HMAC_SHA256_32's 4 bytes).
    static let shortestTagCount = SFrameSuite.allCases.map(\.tagCount).min()!

    /// The KID a frame names, from its header alone (nil if the frame ends inside the header),
    /// so a receiver can hold frames for a key it does not have yet.
    public static func kid(of frame: UnsafeRawBufferPointer) -> UInt64? {
        SFrameHeader(parsing: frame)?.kid
    }

    /// The frame's header (KID, CTR, length). Its values are unauthenticated until `open`
    /// succeeds: check the CTR against an `SFrameReplayWindow` only after that.
    public static func header(of frame: UnsafeRawBufferPointer) -> SFrameHeader? {
        SFrameHeader(parsing: frame)
    }

    /// The most plaintext bytes `open` writes for `frame` (its length less the header and the
    /// shortest tag of any suite); 0 if the header does not parse.
    public static func openedCapacity(_ frame: UnsafeRawBufferPointer) -> Int {
        guard let header = SFrameHeader(parsing: frame) else { return 0 }
        return max(0, frame.count - header.count - shortestTagCount)
    }

    /// Authenticates and decrypts `frame` with the key `key` returns for its KID into `output`.
    /// Throws `.tooShort` if the frame ends inside its header or tag, `.missingKey` if `key`
    /// has none for the KID (the RFC lets a receiver hold the frame until it arrives), `.noKey`
    /// if the tag does not verify (wrong key or suite, or a changed header, metadata, ciphertext
    /// or tag), `.malformed` if `output` is smaller than `openedCapacity` or the frame is huge.
    /// `output` must not overlap `frame`. On any throw `output` holds nothing usable.
    public static func open(_ frame: UnsafeRawBufferPointer, metadata: UnsafeRawBufferPointer = .init(start: nil, count: 0),
                            key: (UInt64) -> SFrameKey?, into output: UnsafeMutableRawBufferPointer) throws(DropReason) -> OpenedFrame {
        guard let header = SFrameHeader(parsing: frame) else { throw .tooShort }
        guard frame.count <= maxFrameCount, metadata.count <= maxFrameCount else { throw .malformed }
        guard let sframeKey = key(header.kid) else { throw .missingKey }
        // A key derived for another KID cannot open this frame; say so without trying.
        guard sframeKey.kid == header.kid else { throw .noKey }
        let tagCount = sframeKey.suite.tagCount
        guard frame.count >= header.count + tagCount, let base = frame.baseAddress else { throw .tooShort }
        let count = frame.count - header.count - tagCount
        guard output.count >= count else { throw .malformed }
        // Even a 0-byte plaintext needs a valid pointer; with count 0 nothing is written.
        let out = output.baseAddress ?? UnsafeMutableRawPointer(mutating: base)
        let opened = sframeKey.open(ctr: header.ctr, header: UnsafeRawBufferPointer(start: base, count: header.count),
                                    metadata: metadata, UnsafeRawBufferPointer(start: base + header.count, count: count),
                                    tag: base + header.count + count, plaintext: out)
        guard opened else {
            // GCM may have decrypted before the tag failed: leave no unauthenticated plaintext.
            if count > 0 { out.initializeMemory(as: UInt8.self, repeating: 0, count: count) }
            throw .noKey
        }
        return OpenedFrame(count: count, keyIndex: header.kid)
    }
}
