internal import COpenSSL
import Synchronization
import Locking

/// AES-GCM with additional data on OpenSSL's libcrypto, 128- or 256-bit keys, 12-byte IVs and
/// 16-byte tags: FrameCryptor authenticates its clear header, which ECall's `GCMCipher`
/// (AES-256, no AAD) cannot. The key schedule is set once; a frame only sets its IV and writes
/// into the caller's buffer. In-place use (`output == input`) is allowed. Not thread-safe:
/// an `AEADPool` lends each to one thread at a time.
final class AEADCipher {
    private let encryptor: OpaquePointer
    private let decryptor: OpaquePointer

    init?(key: UnsafeRawBufferPointer) {
        let cipher: OpaquePointer?
        switch key.count {
        case 16: cipher = EVP_aes_128_gcm()
        case 32: cipher = EVP_aes_256_gcm()
        default: return nil
        }
        guard let cipher, let e = EVP_CIPHER_CTX_new() else { return nil }
        guard let d = EVP_CIPHER_CTX_new() else { EVP_CIPHER_CTX_free(e); return nil }
        encryptor = e
        decryptor = d
        let k = key.baseAddress!.assumingMemoryBound(to: UInt8.self)
        guard EVP_EncryptInit_ex(e, cipher, nil, k, nil) == 1,
              EVP_DecryptInit_ex(d, cipher, nil, k, nil) == 1 else { return nil }
    }

    deinit {
        EVP_CIPHER_CTX_free(encryptor)
        EVP_CIPHER_CTX_free(decryptor)
    }

    /// Encrypts `count` bytes from `input` to `output` and writes the 16-byte tag.
    func seal(iv: UnsafeRawPointer, aad: UnsafeRawBufferPointer, input: UnsafeRawPointer, count: Int,
              output: UnsafeMutableRawPointer, tag: UnsafeMutableRawPointer) -> Bool {
        var n: Int32 = 0, m: Int32 = 0
        let out = output.assumingMemoryBound(to: UInt8.self)
        guard EVP_EncryptInit_ex(encryptor, nil, nil, nil, iv.assumingMemoryBound(to: UInt8.self)) == 1,
              addAAD(encryptor, aad, update: EVP_EncryptUpdate),
              EVP_EncryptUpdate(encryptor, out, &n, input.assumingMemoryBound(to: UInt8.self), Int32(count)) == 1,
              EVP_EncryptFinal_ex(encryptor, out + Int(n), &m) == 1,
              EVP_CIPHER_CTX_ctrl(encryptor, EVP_CTRL_GCM_GET_TAG, 16, tag) == 1 else { return false }
        return Int(n + m) == count
    }

    /// Decrypts and authenticates; false if the tag does not match (wrong key, wrong header or
    /// tampered bytes). `output` then holds garbage.
    func open(iv: UnsafeRawPointer, aad: UnsafeRawBufferPointer, input: UnsafeRawPointer, count: Int,
              tag: UnsafeRawPointer, output: UnsafeMutableRawPointer) -> Bool {
        var n: Int32 = 0, m: Int32 = 0
        let out = output.assumingMemoryBound(to: UInt8.self)
        guard EVP_DecryptInit_ex(decryptor, nil, nil, nil, iv.assumingMemoryBound(to: UInt8.self)) == 1,
              addAAD(decryptor, aad, update: EVP_DecryptUpdate),
              EVP_DecryptUpdate(decryptor, out, &n, input.assumingMemoryBound(to: UInt8.self), Int32(count)) == 1,
              // OpenSSL takes the expected tag through a non-const pointer; it only reads it.
              EVP_CIPHER_CTX_ctrl(decryptor, EVP_CTRL_GCM_SET_TAG, 16, UnsafeMutableRawPointer(mutating: tag)) == 1,
              EVP_DecryptFinal_ex(decryptor, out + Int(n), &m) == 1 else { return false }
        return Int(n + m) == count
    }

    private typealias Update = (OpaquePointer?, UnsafeMutablePointer<UInt8>?, UnsafeMutablePointer<Int32>?, UnsafePointer<UInt8>?, Int32) -> Int32

    private func addAAD(_ ctx: OpaquePointer, _ aad: UnsafeRawBufferPointer, update: Update) -> Bool {
        guard let base = aad.baseAddress, aad.count > 0 else { return true }
        var n: Int32 = 0
        return update(ctx, nil, &n, base.assumingMemoryBound(to: UInt8.self), Int32(aad.count)) == 1
    }

    /// PBKDF2-HMAC-SHA256, as libwebrtc's `DerivePBKDF2KeyFromRawKey` (100 000 iterations).
    static func pbkdf2SHA256(_ secret: [UInt8], salt: [UInt8], iterations: Int32 = 100_000, count: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        // An empty array may have no address; libcrypto wants one even for zero bytes.
        let password = secret.isEmpty ? [0] : secret, saltBytes = salt.isEmpty ? [0] : salt
        let ok = password.withUnsafeBufferPointer { p in
            saltBytes.withUnsafeBufferPointer { s in
                out.withUnsafeMutableBufferPointer { o in
                    p.baseAddress!.withMemoryRebound(to: CChar.self, capacity: p.count) { pw in
                        PKCS5_PBKDF2_HMAC(pw, Int32(secret.count), s.baseAddress, Int32(salt.count),
                                          iterations, EVP_sha256(), Int32(count), o.baseAddress)
                    }
                }
            }
        }
        // Only fails on allocation failure inside libcrypto: nothing sensible to go on with.
        precondition(ok == 1, "PKCS5_PBKDF2_HMAC failed")
        return out
    }
}

/// The ciphers of one AES key, lent to one thread at a time: after the first frame on each
/// thread no frame allocates.
final class AEADPool: Sendable {
    // The ciphers are only touched by the thread that took them out of the pool.
    private struct Idle: @unchecked Sendable { var ciphers: [AEADCipher] = [] }
    private let idle = Locked(Idle())
    private let key: [UInt8]

    init(key: [UInt8]) {
        self.key = key
        idle.withLock { $0.ciphers.reserveCapacity(8) }
    }

    /// Runs `body` with a cipher of this key; nil if OpenSSL could not set one up.
    func withCipher<R>(_ body: (AEADCipher) -> R) -> R? {
        let cipher = idle.withLock { $0.ciphers.popLast() } ?? key.withUnsafeBytes { AEADCipher(key: $0) }
        guard let cipher else { return nil }
        defer { idle.withLock { if $0.ciphers.count < 8 { $0.ciphers.append(cipher) } } }
        return body(cipher)
    }
}
