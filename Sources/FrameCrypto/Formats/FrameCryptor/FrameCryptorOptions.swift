/// How a call's FrameCryptor key provider is configured (libwebrtc's `KeyProviderOptions`,
/// webrtc-sdk `api/crypto/frame_crypto_transformer.h`). Sender and receiver must agree on the
/// salt; the rest only shapes what a receiver accepts.
///
/// PQSRTC (`RTCSession.ensureFrameKeyProviderIfNeeded()`): salt "PQSRTCFrameEncryptionSalt"
/// unless the app sets its own, magic bytes "PQSRTCMagicBytes", ratchet window 8, key ring 16.
public struct FrameCryptorOptions: Sendable, Equatable {
    /// The PBKDF2 salt of both the AES key and each ratchet step.
    public var ratchetSalt: [UInt8]
    /// A frame ending in these bytes was not encrypted (LiveKit's server-injected frames); empty:
    /// no such frames.
    public var magicBytes: [UInt8]
    /// How many ratchet steps past its current material a receiver tries before giving up.
    public var ratchetWindow: Int
    /// Key indexes at or above this are refused as missing keys.
    public var keyRingSize: Int

    public init(ratchetSalt: [UInt8], magicBytes: [UInt8] = [], ratchetWindow: Int = 8, keyRingSize: Int = 16) {
        self.ratchetSalt = ratchetSalt
        self.magicBytes = magicBytes
        // libwebrtc clamps the ring to 1...256 and reads a negative window as none.
        self.ratchetWindow = max(0, ratchetWindow)
        self.keyRingSize = min(max(1, keyRingSize), 256)
    }

    /// PQSRTC's defaults (RTCSession.CryptorConfiguration and ensureFrameKeyProviderIfNeeded).
    public static let pqsrtc = FrameCryptorOptions(
        ratchetSalt: Array("PQSRTCFrameEncryptionSalt".utf8),
        magicBytes: Array("PQSRTCMagicBytes".utf8))
}
