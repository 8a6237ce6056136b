import Crypto
import Locking
import Synchronization

/// One SFrame key: `sframe_key` and `sframe_salt` derived once from a base key, its KID and the
/// suite (RFC 9605 §4.4.2), with the ciphers that use them. A base key is for sealing or for
/// opening, never both (RFC 9605 §4.4.1): each sender's key is its own.
public final class SFrameKey: Sendable {
    public let kid: UInt64
    public let suite: SFrameSuite
    /// `sframe_salt` as the nonce's first 4 bytes and last 8 bytes (the CTR is XORed into those).
    private let saltHigh: UInt32
    private let saltLow: UInt64
    private let ciphers: SFrameCipherPool

    /// Derives the key and salt; `.sealFailed` only if OpenSSL cannot set up the suite's cipher.
    public convenience init(baseKey: KeyMaterial, kid: UInt64, suite: SFrameSuite = .default) throws(FrameError) {
        let derived = Self.derive(baseKey: baseKey.bytes, kid: kid, suite: suite)
        try self.init(sframeKey: derived.key, salt: derived.salt, kid: kid, suite: suite)
    }

    /// A key from an already derived `sframe_key` and `sframe_salt` (tests: RFC 9605 Appendix C).
    init(sframeKey: [UInt8], salt: [UInt8], kid: UInt64, suite: SFrameSuite) throws(FrameError) {
        guard sframeKey.count == suite.keyCount, salt.count == SFrameSuite.nonceCount else { throw .sealFailed }
        self.kid = kid
        self.suite = suite
        saltHigh = salt[0..<4].reduce(0) { $0 << 8 | UInt32($1) }
        saltLow = salt[4..<12].reduce(0) { $0 << 8 | UInt64($1) }
        ciphers = SFrameCipherPool(suite: suite, key: sframeKey)
        guard ciphers.withCipher({ _ in true }) == true else { throw .sealFailed }
    }

    /// RFC 9605 §4.4.2: `sframe_secret = HKDF-Extract("", base_key)`, then `sframe_key` and
    /// `sframe_salt` expanded with the labels "SFrame 1.0 Secret key " / "... salt " followed by
    /// the KID (8 bytes) and the suite (2 bytes), big-endian; SHA-512 for suite 5, else SHA-256.
    static func derive(baseKey: [UInt8], kid: UInt64, suite: SFrameSuite) -> (secret: [UInt8], key: [UInt8], salt: [UInt8]) {
        suite.usesSHA512 ? derive(SHA512.self, baseKey, kid, suite) : derive(SHA256.self, baseKey, kid, suite)
    }

    private static func derive<H: HashFunction>(_: H.Type, _ baseKey: [UInt8], _ kid: UInt64, _ suite: SFrameSuite) -> (secret: [UInt8], key: [UInt8], salt: [UInt8]) {
        let secret = HKDF<H>.extract(inputKeyMaterial: SymmetricKey(data: baseKey), salt: [UInt8]())
        let labels = Self.labels(kid: kid, suite: suite)
        func expand(_ label: [UInt8], _ count: Int) -> [UInt8] {
            HKDF<H>.expand(pseudoRandomKey: secret, info: label, outputByteCount: count).withUnsafeBytes { Array($0) }
        }
        return (Array(secret), expand(labels.key, suite.keyCount), expand(labels.salt, SFrameSuite.nonceCount))
    }

    /// The HKDF-Expand labels: the text, then the KID as 8 and the suite as 2 big-endian bytes.
    static func labels(kid: UInt64, suite: SFrameSuite) -> (key: [UInt8], salt: [UInt8]) {
        let context = withUnsafeBytes(of: kid.bigEndian) { Array($0) } + withUnsafeBytes(of: suite.rawValue.bigEndian) { Array($0) }
        return (Array("SFrame 1.0 Secret key ".utf8) + context, Array("SFrame 1.0 Secret salt ".utf8) + context)
    }

    /// nonce = sframe_salt XOR CTR, the CTR as a 12-byte big-endian integer.
    func withNonce<R>(ctr: UInt64, _ body: (UnsafeRawPointer) -> R) -> R {
        withUnsafeTemporaryAllocation(byteCount: 12, alignment: 4) { nonce in
            nonce.storeBytes(of: saltHigh.bigEndian, toByteOffset: 0, as: UInt32.self)
            nonce.storeBytes(of: (saltLow ^ ctr).bigEndian, toByteOffset: 4, as: UInt64.self)
            return body(UnsafeRawPointer(nonce.baseAddress!))
        }
    }

    func seal(ctr: UInt64, header: UnsafeRawBufferPointer, metadata: UnsafeRawBufferPointer,
              _ plaintext: UnsafeRawBufferPointer, ciphertext: UnsafeMutableRawPointer, tag: UnsafeMutableRawPointer) -> Bool {
        withNonce(ctr: ctr) { nonce in
            ciphers.withCipher {
                $0.seal(nonce: nonce, header: header, metadata: metadata, plaintext, ciphertext: ciphertext, tag: tag)
            } ?? false
        }
    }

    func open(ctr: UInt64, header: UnsafeRawBufferPointer, metadata: UnsafeRawBufferPointer,
              _ ciphertext: UnsafeRawBufferPointer, tag: UnsafeRawPointer, plaintext: UnsafeMutableRawPointer) -> Bool {
        withNonce(ctr: ctr) { nonce in
            ciphers.withCipher {
                $0.open(nonce: nonce, header: header, metadata: metadata, ciphertext, tag: tag, plaintext: plaintext)
            } ?? false
        }
    }
}

/// The ciphers of one SFrame key, lent to one thread at a time (as `GCMPool` does for ECall):
/// after the first frame on each thread no frame sets up a cipher.
final class SFrameCipherPool: Sendable {
    // The ciphers are only touched by the thread that took them out of the pool.
    private struct Idle: @unchecked Sendable { var ciphers: [SFrameCipher] = [] }
    private let idle = Locked(Idle())
    private let suite: SFrameSuite
    private let key: [UInt8]

    init(suite: SFrameSuite, key: [UInt8]) {
        self.suite = suite
        self.key = key
        idle.withLock { $0.ciphers.reserveCapacity(8) }
    }

    /// Runs `body` with a cipher of this key; nil if OpenSSL could not set one up.
    func withCipher<R>(_ body: (SFrameCipher) -> R) -> R? {
        let cipher = idle.withLock { $0.ciphers.popLast() } ?? key.withUnsafeBytes { SFrameCipher(suite: suite, key: $0) }
        guard let cipher else { return nil }
        defer { idle.withLock { if $0.ciphers.count < 8 { $0.ciphers.append(cipher) } } }
        return body(cipher)
    }
}
