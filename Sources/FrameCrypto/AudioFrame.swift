
/// The ECall audio frame (ECALL-WIRE §2): `0xFF ‖ nonce(12) ‖ ciphertext ‖ tag(16)`,
/// AES-256-GCM over the encoded Opus frame, no AAD.
public enum AudioFrame {
    public static let marker: UInt8 = 0xFF
    public static let nonceCount = 12
    public static let tagCount = 16
    /// Bytes a sealed frame adds to its plaintext.
    public static let overhead = 1 + nonceCount + tagCount

    /// Seals `plaintext` into `output` (at least `plaintext.count + overhead` bytes) and returns
    /// the bytes written. Each frame draws a fresh random nonce; `nonce` (12 bytes) is for
    /// known-answer tests only. Allocates nothing once the key's cipher exists on this thread.
    public static func seal(
        _ plaintext: UnsafeRawBufferPointer,
        key: CallKey,
        into output: UnsafeMutableRawBufferPointer,
        nonce: UnsafeRawBufferPointer? = nil
    ) throws(FrameError) -> Int {
        let total = plaintext.count + overhead
        guard output.count >= total, let out = output.baseAddress else { throw .outputTooSmall }
        out.storeBytes(of: marker, as: UInt8.self)
        let noncePointer = out + 1
        if let nonce {
            guard nonce.count == nonceCount else { throw .sealFailed }
            noncePointer.copyMemory(from: nonce.baseAddress!, byteCount: nonceCount)
        }
        let sealed = key.pool.withCipher { cipher in
            (nonce != nil || cipher.nextNonce(into: noncePointer))
                && cipher.seal(nonce: noncePointer, plaintext, ciphertext: noncePointer + nonceCount, tag: out + (total - tagCount))
        }
        guard sealed == true else { throw .sealFailed }
        return total
    }

    /// Opens a received frame into `output` (at least `frame.count - overhead` bytes), trying
    /// the ring's current, backup and future keys in that order. Returns the plaintext length.
    /// On failure `output` may hold garbage and must not be used.
    public static func open(
        _ frame: UnsafeRawBufferPointer,
        keys: KeyRing.Candidates,
        into output: UnsafeMutableRawBufferPointer
    ) throws(DropReason) -> Int {
        guard let first = frame.first, first == marker else { throw .noMarker }
        guard frame.count >= overhead, let base = frame.baseAddress else { throw .tooShort }
        let plainCount = frame.count - overhead
        guard output.count >= plainCount else { throw .tooShort }
        let nonce = base + 1
        let ciphertext = UnsafeRawBufferPointer(start: nonce + nonceCount, count: plainCount)
        let tag = base + (frame.count - tagCount)
        let plain = output.baseAddress ?? UnsafeMutableRawPointer(mutating: nonce)  // empty output: never written
        // Tried one by one rather than through an array: this runs for every frame.
        func attempt(_ key: CallKey?) -> Bool {
            key?.pool.withCipher { $0.open(nonce: nonce, ciphertext, tag: tag, plaintext: plain) } == true
        }
        guard attempt(keys.current) || attempt(keys.backup) || attempt(keys.future) else { throw .noKey }
        return plainCount
    }
}

/// Why a received frame was dropped. Raw values are the manifest's and counters' names.
public enum DropReason: String, Error, CaseIterable, Sendable, Codable {
    /// The first byte is not the ECall marker: a plaintext frame, or another format.
    case noMarker = "no_marker"
    /// Shorter than the format's fixed overhead.
    case tooShort = "too_short"
    /// No key in the ring opens it (wrong key, or tampered bytes).
    case noKey = "no_key_opens"
    /// The frame's structure is broken (video: length prefixes that do not add up).
    case malformed = "malformed"
    /// The frame names a key index (FrameCryptor) or KID (SFrame) this receiver does not hold
    /// (yet: a key handed in late opens the frames that waited for it).
    case missingKey = "missing_key"
    /// The frame ends in the format's "unencrypted" magic bytes (FrameCryptor's SIF trailer):
    /// clear by its sender's (or the SFU's) word, so never taken as the participant's media.
    case unencrypted = "unencrypted"
    /// It opened, but its counter (SFrame's CTR) was seen before on this track or is older
    /// than the replay window: the SFU, which cannot read frames, can still send old ones again.
    case replayed = "replayed"
}

/// Why a frame could not be sealed; the frame is then dropped, never sent in the clear.
public enum FrameError: Error, Sendable, Equatable {
    case outputTooSmall
    case sealFailed
    case noKey
}
