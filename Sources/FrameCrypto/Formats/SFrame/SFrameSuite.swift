/// The SFrame cipher suites of RFC 9605 §4.5 (IANA "SFrame Cipher Suites"), by their registry value.
public enum SFrameSuite: UInt16, CaseIterable, Sendable, Codable {
    /// AES-128 in counter mode with HMAC-SHA256 truncated to 10 bytes (RFC 9605 §4.5.1).
    case aes128CtrHmacSha256_80 = 1
    /// As `_80`, with an 8-byte tag.
    case aes128CtrHmacSha256_64 = 2
    /// As `_80`, with a 4-byte tag (RFC 9605 §9.5: for audio, where forgeries cost little).
    case aes128CtrHmacSha256_32 = 3
    /// AES-128-GCM, HKDF-SHA256: the suite sfubot uses unless told otherwise (`--sframe-suite`).
    case aes128GcmSha256_128 = 4
    /// AES-256-GCM, HKDF-SHA512.
    case aes256GcmSha512_128 = 5

    public static let `default` = SFrameSuite.aes128GcmSha256_128

    /// A suite by its RFC name ("AES_128_GCM_SHA256_128"), in any letter case.
    public init?(name: String) {
        let upper = name.uppercased()
        guard let suite = Self.allCases.first(where: { $0.name == upper }) else { return nil }
        self = suite
    }

    /// The suite's name as RFC 9605 and the IANA registry spell it.
    public var name: String {
        switch self {
        case .aes128CtrHmacSha256_80: "AES_128_CTR_HMAC_SHA256_80"
        case .aes128CtrHmacSha256_64: "AES_128_CTR_HMAC_SHA256_64"
        case .aes128CtrHmacSha256_32: "AES_128_CTR_HMAC_SHA256_32"
        case .aes128GcmSha256_128: "AES_128_GCM_SHA256_128"
        case .aes256GcmSha512_128: "AES_256_GCM_SHA512_128"
        }
    }

    /// Bytes of the authentication tag at the end of every frame (`AEAD.Nt`).
    public var tagCount: Int {
        switch self {
        case .aes128CtrHmacSha256_80: 10
        case .aes128CtrHmacSha256_64: 8
        case .aes128CtrHmacSha256_32: 4
        case .aes128GcmSha256_128, .aes256GcmSha512_128: 16
        }
    }

    /// Bytes of `sframe_key` (`AEAD.Nk`): for the CTR suites, the AES key then the HMAC key.
    var keyCount: Int {
        switch self {
        case .aes128CtrHmacSha256_80, .aes128CtrHmacSha256_64, .aes128CtrHmacSha256_32: 16 + 32
        case .aes128GcmSha256_128: 16
        case .aes256GcmSha512_128: 32
        }
    }

    /// Bytes of the nonce and of `sframe_salt` (`AEAD.Nn`): 12 for every suite.
    static let nonceCount = 12

    /// Whether the AEAD is AES-CTR + HMAC (RFC 9605 §4.5.1) rather than AES-GCM.
    var isCtrHmac: Bool { rawValue <= 3 }

    /// Whether HKDF runs on SHA-512 (only AES_256_GCM_SHA512_128) rather than SHA-256.
    var usesSHA512: Bool { self == .aes256GcmSha512_128 }
}
