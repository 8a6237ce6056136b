internal import COpenSSL

/// AES-256-GCM for one key on OpenSSL's libcrypto: the key schedule is set up once, each
/// frame only sets its IV, and output goes straight into the caller's buffer. Not thread-safe:
/// a `GCMPool` hands each to one thread at a time.
final class GCMCipher {
    private let encryptor: OpaquePointer
    private let decryptor: OpaquePointer
    /// Random bytes drawn 64 nonces at a time: one CSPRNG call per 64 frames, not per frame.
    private let nonces = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 12, alignment: 8)
    private var nonceOffset = 64 * 12

    init?(key: UnsafeRawBufferPointer) {
        guard key.count == 32, let e = EVP_CIPHER_CTX_new(), let d = EVP_CIPHER_CTX_new() else { return nil }
        encryptor = e
        decryptor = d
        let k = key.baseAddress!.assumingMemoryBound(to: UInt8.self)
        guard EVP_EncryptInit_ex(e, EVP_aes_256_gcm(), nil, k, nil) == 1,
              EVP_DecryptInit_ex(d, EVP_aes_256_gcm(), nil, k, nil) == 1 else { return nil }
    }

    deinit {
        EVP_CIPHER_CTX_free(encryptor)
        EVP_CIPHER_CTX_free(decryptor)
        nonces.initializeMemory(as: UInt8.self, repeating: 0)
        nonces.deallocate()
    }

    /// Writes a fresh random 12-byte nonce at `p`; false if the CSPRNG failed.
    func nextNonce(into p: UnsafeMutableRawPointer) -> Bool {
        if nonceOffset == nonces.count {
            guard GCMCipher.random(nonces.baseAddress!, count: nonces.count) else { return false }
            nonceOffset = 0
        }
        p.copyMemory(from: nonces.baseAddress! + nonceOffset, byteCount: 12)
        // Each nonce is used once: wipe it from the batch.
        (nonces.baseAddress! + nonceOffset).initializeMemory(as: UInt8.self, repeating: 0, count: 12)
        nonceOffset += 12
        return true
    }

    /// Encrypts `plaintext` into `ciphertext` (same length) and writes the 16-byte tag.
    func seal(nonce: UnsafeRawPointer, _ plaintext: UnsafeRawBufferPointer, ciphertext: UnsafeMutableRawPointer, tag: UnsafeMutableRawPointer) -> Bool {
        var n: Int32 = 0, m: Int32 = 0
        let out = ciphertext.assumingMemoryBound(to: UInt8.self)
        guard EVP_EncryptInit_ex(encryptor, nil, nil, nil, nonce.assumingMemoryBound(to: UInt8.self)) == 1,
              EVP_EncryptUpdate(encryptor, out, &n, bytes(plaintext, or: out), Int32(plaintext.count)) == 1,
              EVP_EncryptFinal_ex(encryptor, out + Int(n), &m) == 1,
              EVP_CIPHER_CTX_ctrl(encryptor, EVP_CTRL_GCM_GET_TAG, 16, tag) == 1 else { return false }
        return Int(n + m) == plaintext.count
    }

    /// Decrypts and authenticates; false if the tag does not match (wrong key or tampered).
    func open(nonce: UnsafeRawPointer, _ ciphertext: UnsafeRawBufferPointer, tag: UnsafeRawPointer, plaintext: UnsafeMutableRawPointer) -> Bool {
        var n: Int32 = 0, m: Int32 = 0
        let out = plaintext.assumingMemoryBound(to: UInt8.self)
        guard EVP_DecryptInit_ex(decryptor, nil, nil, nil, nonce.assumingMemoryBound(to: UInt8.self)) == 1,
              EVP_DecryptUpdate(decryptor, out, &n, bytes(ciphertext, or: out), Int32(ciphertext.count)) == 1,
              // OpenSSL takes the expected tag through a non-const pointer; it only reads it.
              EVP_CIPHER_CTX_ctrl(decryptor, EVP_CTRL_GCM_SET_TAG, 16, UnsafeMutableRawPointer(mutating: tag)) == 1,
              EVP_DecryptFinal_ex(decryptor, out + Int(n), &m) == 1 else { return false }
        return Int(n + m) == ciphertext.count
    }

    /// Fills `count` bytes at `p` from OpenSSL's CSPRNG (no system call per frame).
    static func random(_ p: UnsafeMutableRawPointer, count: Int) -> Bool {
        RAND_bytes(p.assumingMemoryBound(to: UInt8.self), Int32(count)) == 1
    }

    /// An empty buffer may have no address, but OpenSSL wants a valid pointer: with a length
    /// of 0 it reads nothing, so any valid address does.
    private func bytes(_ b: UnsafeRawBufferPointer, or fallback: UnsafeMutablePointer<UInt8>) -> UnsafePointer<UInt8> {
        b.baseAddress.map { $0.assumingMemoryBound(to: UInt8.self) } ?? UnsafePointer(fallback)
    }
}
