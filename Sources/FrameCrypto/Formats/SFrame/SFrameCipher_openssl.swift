internal import COpenSSL

/// One SFrame suite's AEAD for one `sframe_key` on OpenSSL's libcrypto: AES-128/256-GCM, or
/// RFC 9605 §4.5.1's AES-128-CTR + HMAC-SHA256 (encrypt-then-MAC, tag truncated). Key schedules
/// are set up once; each frame sets its nonce and writes into the caller's buffers. (The
/// project's `GCMCipher` is AES-256 with random nonces and no AAD: SFrame needs AES-128, a
/// given nonce and the header as AAD, hence this separate class.) Not thread-safe: an
/// `SFrameKey` lends each to one thread at a time.
final class SFrameCipher {
    private let tagCount: Int
    private let isCtrHmac: Bool
    /// GCM: the encrypting context. CTR: the one context for both ways (CTR is its own inverse).
    private let encryptor: OpaquePointer
    /// GCM only: the decrypting context.
    private let decryptor: OpaquePointer?
    /// CTR suites only: HMAC-SHA256 keyed with `auth_key`, re-armed per frame with the same key.
    private let hmac: OpaquePointer?
    /// 16-byte CTR IV, 24-byte length prefix, 32-byte MAC: per frame without allocating.
    private let scratch: UnsafeMutableRawBufferPointer

    init?(suite: SFrameSuite, key: UnsafeRawBufferPointer) {
        guard key.count == suite.keyCount, let k = key.baseAddress?.assumingMemoryBound(to: UInt8.self),
              let e = EVP_CIPHER_CTX_new() else { return nil }
        // Every property is set before any check below fails, so deinit frees what was made.
        scratch = .allocate(byteCount: 16 + 24 + 32, alignment: 8)
        tagCount = suite.tagCount
        isCtrHmac = suite.isCtrHmac
        encryptor = e
        if suite.isCtrHmac {
            decryptor = nil
            hmac = Self.makeHMAC(key: UnsafeRawBufferPointer(rebasing: key[16...]))
            guard hmac != nil, EVP_EncryptInit_ex(e, EVP_aes_128_ctr(), nil, k, nil) == 1 else { return nil }
        } else {
            hmac = nil
            decryptor = EVP_CIPHER_CTX_new()
            let cipher = suite == .aes128GcmSha256_128 ? EVP_aes_128_gcm() : EVP_aes_256_gcm()
            guard let d = decryptor, EVP_EncryptInit_ex(e, cipher, nil, k, nil) == 1,
                  EVP_DecryptInit_ex(d, cipher, nil, k, nil) == 1 else { return nil }
        }
    }

    deinit {
        EVP_CIPHER_CTX_free(encryptor)
        if let decryptor { EVP_CIPHER_CTX_free(decryptor) }
        if let hmac { EVP_MAC_CTX_free(hmac) }
        scratch.initializeMemory(as: UInt8.self, repeating: 0)
        scratch.deallocate()
    }

    /// Encrypts `plaintext` into `ciphertext` (same length) and writes the suite's tag, with
    /// AAD = `header` ‖ `metadata` (RFC 9605 §4.4.3).
    func seal(nonce: UnsafeRawPointer, header: UnsafeRawBufferPointer, metadata: UnsafeRawBufferPointer,
              _ plaintext: UnsafeRawBufferPointer, ciphertext: UnsafeMutableRawPointer, tag: UnsafeMutableRawPointer) -> Bool {
        if isCtrHmac {
            guard ctr(nonce: nonce, plaintext, into: ciphertext) else { return false }
            return mac(nonce: nonce, header: header, metadata: metadata,
                       UnsafeRawBufferPointer(start: ciphertext, count: plaintext.count), into: tag)
        }
        var n: Int32 = 0, m: Int32 = 0
        let out = ciphertext.assumingMemoryBound(to: UInt8.self)
        guard EVP_EncryptInit_ex(encryptor, nil, nil, nil, nonce.assumingMemoryBound(to: UInt8.self)) == 1,
              aad(encryptor, header, metadata),
              EVP_EncryptUpdate(encryptor, out, &n, bytes(plaintext, or: out), Int32(plaintext.count)) == 1,
              EVP_EncryptFinal_ex(encryptor, out + Int(n), &m) == 1,
              EVP_CIPHER_CTX_ctrl(encryptor, EVP_CTRL_GCM_GET_TAG, 16, tag) == 1 else { return false }
        return Int(n + m) == plaintext.count
    }

    /// Authenticates, then decrypts into `plaintext`; false if the tag does not match (wrong key,
    /// tampered header, metadata, ciphertext or tag). Nothing is written before the CTR suites'
    /// tag checks out; GCM may leave unauthenticated bytes in `plaintext` on failure.
    func open(nonce: UnsafeRawPointer, header: UnsafeRawBufferPointer, metadata: UnsafeRawBufferPointer,
              _ ciphertext: UnsafeRawBufferPointer, tag: UnsafeRawPointer, plaintext: UnsafeMutableRawPointer) -> Bool {
        if isCtrHmac {
            let expected = scratch.baseAddress! + 40
            guard mac(nonce: nonce, header: header, metadata: metadata, ciphertext, into: expected),
                  CRYPTO_memcmp(expected, tag, tagCount) == 0 else { return false }
            return ctr(nonce: nonce, ciphertext, into: plaintext)
        }
        guard let decryptor else { return false }
        var n: Int32 = 0, m: Int32 = 0
        let out = plaintext.assumingMemoryBound(to: UInt8.self)
        guard EVP_DecryptInit_ex(decryptor, nil, nil, nil, nonce.assumingMemoryBound(to: UInt8.self)) == 1,
              aad(decryptor, header, metadata),
              EVP_DecryptUpdate(decryptor, out, &n, bytes(ciphertext, or: out), Int32(ciphertext.count)) == 1,
              // OpenSSL takes the expected tag through a non-const pointer; it only reads it.
              EVP_CIPHER_CTX_ctrl(decryptor, EVP_CTRL_GCM_SET_TAG, 16, UnsafeMutableRawPointer(mutating: tag)) == 1,
              EVP_DecryptFinal_ex(decryptor, out + Int(n), &m) == 1 else { return false }
        return Int(n + m) == ciphertext.count
    }

    /// GCM's AAD in up to two updates (header, then metadata when there is any).
    private func aad(_ ctx: OpaquePointer, _ header: UnsafeRawBufferPointer, _ metadata: UnsafeRawBufferPointer) -> Bool {
        aadPart(ctx, header) && aadPart(ctx, metadata)
    }

    private func aadPart(_ ctx: OpaquePointer, _ part: UnsafeRawBufferPointer) -> Bool {
        guard let p = part.baseAddress, part.count > 0 else { return true }
        var n: Int32 = 0
        return EVP_CipherUpdate(ctx, nil, &n, p.assumingMemoryBound(to: UInt8.self), Int32(part.count)) == 1
    }

    /// AES-CTR from the initial counter block nonce ‖ 0x00000000.
    private func ctr(nonce: UnsafeRawPointer, _ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawPointer) -> Bool {
        let iv = scratch.baseAddress!
        iv.copyMemory(from: nonce, byteCount: 12)
        iv.storeBytes(of: 0, toByteOffset: 12, as: UInt32.self)
        var n: Int32 = 0
        let out = output.assumingMemoryBound(to: UInt8.self)
        guard EVP_EncryptInit_ex(encryptor, nil, nil, nil, iv.assumingMemoryBound(to: UInt8.self)) == 1,
              EVP_EncryptUpdate(encryptor, out, &n, bytes(input, or: out), Int32(input.count)) == 1 else { return false }
        return Int(n) == input.count
    }

    /// The truncated tag: HMAC(auth_key, len(aad) ‖ len(ct) ‖ Nt ‖ nonce ‖ aad ‖ ct), each length
    /// 8 bytes big-endian, aad = header ‖ metadata (RFC 9605 §4.5.1 `compute_tag`).
    private func mac(nonce: UnsafeRawPointer, header: UnsafeRawBufferPointer, metadata: UnsafeRawBufferPointer,
                     _ ciphertext: UnsafeRawBufferPointer, into tag: UnsafeMutableRawPointer) -> Bool {
        guard let hmac else { return false }
        let lengths = scratch.baseAddress! + 16, full = scratch.baseAddress! + 40
        lengths.storeBytes(of: UInt64(header.count + metadata.count).bigEndian, toByteOffset: 0, as: UInt64.self)
        lengths.storeBytes(of: UInt64(ciphertext.count).bigEndian, toByteOffset: 8, as: UInt64.self)
        lengths.storeBytes(of: UInt64(tagCount).bigEndian, toByteOffset: 16, as: UInt64.self)
        // A nil key re-arms the context with the key it was set up with (no new key schedule).
        guard EVP_MAC_init(hmac, nil, 0, nil) == 1,
              macPart(hmac, UnsafeRawBufferPointer(start: lengths, count: 24)),
              macPart(hmac, UnsafeRawBufferPointer(start: nonce, count: 12)),
              macPart(hmac, header), macPart(hmac, metadata), macPart(hmac, ciphertext) else { return false }
        var written = 0
        guard EVP_MAC_final(hmac, full.assumingMemoryBound(to: UInt8.self), &written, 32) == 1, written == 32 else { return false }
        if tag != full { tag.copyMemory(from: full, byteCount: tagCount) }
        return true
    }

    private func macPart(_ ctx: OpaquePointer, _ part: UnsafeRawBufferPointer) -> Bool {
        guard let p = part.baseAddress, part.count > 0 else { return true }
        return EVP_MAC_update(ctx, p.assumingMemoryBound(to: UInt8.self), part.count) == 1
    }

    /// An HMAC-SHA256 context keyed once with `key`; nil if OpenSSL lacks it.
    private static func makeHMAC(key: UnsafeRawBufferPointer) -> OpaquePointer? {
        guard let algorithm = EVP_MAC_fetch(nil, "HMAC", nil) else { return nil }
        defer { EVP_MAC_free(algorithm) }  // the context keeps its own reference
        guard let ctx = EVP_MAC_CTX_new(algorithm) else { return nil }
        let keyed = "digest".withCString { name in
            "SHA256".withCString { digest in
                var params = [OSSL_PARAM_construct_utf8_string(name, UnsafeMutablePointer(mutating: digest), 0), OSSL_PARAM_construct_end()]
                return EVP_MAC_init(ctx, key.baseAddress!.assumingMemoryBound(to: UInt8.self), key.count, &params) == 1
            }
        }
        guard keyed else { EVP_MAC_CTX_free(ctx); return nil }
        return ctx
    }

    /// An empty buffer may have no address, but OpenSSL wants a valid pointer: with a length
    /// of 0 it reads nothing, so any valid address does.
    private func bytes(_ b: UnsafeRawBufferPointer, or fallback: UnsafeMutablePointer<UInt8>) -> UnsafePointer<UInt8> {
        b.baseAddress.map { $0.assumingMemoryBound(to: UInt8.self) } ?? UnsafePointer(fallback)
    }
}
