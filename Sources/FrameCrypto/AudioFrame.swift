public import Crypto
import Foundation

/// The ECall audio frame (ECALL-WIRE §2): `0xFF ‖ nonce(12) ‖ ciphertext ‖ tag(16)`,
/// AES-256-GCM over the encoded Opus frame, no AAD.
public enum AudioFrame {
    public static let marker: UInt8 = 0xFF
    public static let nonceCount = 12
    public static let tagCount = 16
    /// Bytes a sealed frame adds to its plaintext.
    public static let overhead = 1 + nonceCount + tagCount

    /// Seals `plaintext` into `output` (at least `plaintext.count + overhead` bytes) and returns
    /// the bytes written. A fresh random nonce is drawn unless one is given (known-answer tests).
    public static func seal(
        _ plaintext: UnsafeRawBufferPointer,
        key: CallKey,
        nonce: AES.GCM.Nonce = AES.GCM.Nonce(),
        into output: UnsafeMutableRawBufferPointer
    ) throws(FrameError) -> Int {
        let total = plaintext.count + overhead
        guard output.count >= total else { throw .outputTooSmall }
        let box: AES.GCM.SealedBox
        do { box = try AES.GCM.seal(plaintext, using: key.symmetricKey, nonce: nonce) } catch { throw .sealFailed }
        output[0] = marker
        nonce.withUnsafeBytes { output.baseAddress!.advanced(by: 1).copyMemory(from: $0.baseAddress!, byteCount: nonceCount) }
        box.ciphertext.copyBytes(to: UnsafeMutableRawBufferPointer(rebasing: output[(1 + nonceCount)...]))
        box.tag.copyBytes(to: UnsafeMutableRawBufferPointer(rebasing: output[(total - tagCount)...]))
        return total
    }

    /// Opens a received frame into `output` (at least `frame.count - overhead` bytes), trying
    /// the ring's current, backup and future keys in that order. Returns the plaintext length.
    public static func open(
        _ frame: UnsafeRawBufferPointer,
        keys: KeyRing.Candidates,
        into output: UnsafeMutableRawBufferPointer
    ) throws(DropReason) -> Int {
        guard let first = frame.first, first == marker else { throw .noMarker }
        guard frame.count >= overhead else { throw .tooShort }
        let plainCount = frame.count - overhead
        guard output.count >= plainCount else { throw .tooShort }
        let box: AES.GCM.SealedBox
        do {
            box = try AES.GCM.SealedBox(
                nonce: AES.GCM.Nonce(data: UnsafeRawBufferPointer(rebasing: frame[1..<(1 + nonceCount)])),
                ciphertext: UnsafeRawBufferPointer(rebasing: frame[(1 + nonceCount)..<(frame.count - tagCount)]),
                tag: UnsafeRawBufferPointer(rebasing: frame[(frame.count - tagCount)...]))
        } catch { throw .tooShort }
        // Tried one by one rather than through an array: this runs for every frame.
        func attempt(_ key: CallKey?) -> Bool {
            guard let key, let plain = try? AES.GCM.open(box, using: key.symmetricKey) else { return false }
            plain.copyBytes(to: output, count: plainCount)
            return true
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
}

/// Why a frame could not be sealed; the frame is then dropped, never sent in the clear.
public enum FrameError: Error, Sendable, Equatable {
    case outputTooSmall
    case sealFailed
    case noKey
}
