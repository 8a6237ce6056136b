import Testing
@testable import FrameCrypto

/// Every test vector of RFC 9605 Appendix C (SFrameVectors.swift).
@Suite struct SFrameVectorTests {
    @Test func everyHeaderVectorEncodesAndParses() throws {
        #expect(SFrameVectors.headers.count == 17 && SFrameVectors.headers.allSatisfy { $0.count == 17 })
        for (i, kid) in SFrameVectors.values.enumerated() {
            for (j, ctr) in SFrameVectors.values.enumerated() {
                let expected = [UInt8](hex: SFrameVectors.headers[i][j])
                let header = SFrameHeader(kid: kid, ctr: ctr)
                #expect(header.bytes == expected, "KID \(kid) CTR \(ctr)")
                #expect(header.count == expected.count)
                // Parsed alone and followed by other bytes: the header ends where it should.
                for trailing in [[], [0xFF, 0x00, 0xAA]] as [[UInt8]] {
                    let parsed = try #require((expected + trailing).withUnsafeBytes { SFrameHeader(parsing: $0) })
                    #expect(parsed.kid == kid && parsed.ctr == ctr && parsed.count == expected.count)
                }
            }
        }
    }

    @Test func ctrHmacAEADVectors() throws {
        for v in SFrameVectors.ctrHmac {
            let suite = try #require(SFrameSuite(rawValue: v.suite))
            let key = [UInt8](hex: v.key), nonce = [UInt8](hex: v.nonce), aad = [UInt8](hex: v.aad)
            let pt = [UInt8](hex: v.pt), ct = [UInt8](hex: v.ct)
            #expect(Array(key[..<16]) == [UInt8](hex: v.encKey) && Array(key[16...]) == [UInt8](hex: v.authKey))
            #expect(ct.count == pt.count + suite.tagCount)
            let cipher = try #require(key.withUnsafeBytes { SFrameCipher(suite: suite, key: $0) })
            // Twice with the same cipher: the CTR and HMAC contexts re-arm per frame.
            for split in [aad.count, 5, 0] {
                #expect(seal(cipher, suite, nonce, Array(aad[..<split]), Array(aad[split...]), pt) == ct, "suite \(v.suite) split \(split)")
                #expect(open(cipher, suite, nonce, Array(aad[..<split]), Array(aad[split...]), ct) == pt)
            }
            var tampered = ct
            tampered[0] ^= 1
            #expect(open(cipher, suite, nonce, aad, [], tampered) == nil)
        }
    }

    @Test func keyScheduleVectors() throws {
        for v in SFrameVectors.frames {
            let suite = try #require(SFrameSuite(rawValue: v.suite))
            let labels = SFrameKey.labels(kid: v.kid, suite: suite)
            #expect(labels.key == [UInt8](hex: v.keyLabel) && labels.salt == [UInt8](hex: v.saltLabel), "suite \(v.suite)")
            let derived = SFrameKey.derive(baseKey: [UInt8](hex: v.baseKey), kid: v.kid, suite: suite)
            #expect(derived.secret == [UInt8](hex: v.secret), "suite \(v.suite)")
            #expect(derived.key == [UInt8](hex: v.key), "suite \(v.suite)")
            #expect(derived.salt == [UInt8](hex: v.salt), "suite \(v.suite)")
            let key = try SFrameKey(baseKey: KeyMaterial(hex: v.baseKey), kid: v.kid, suite: suite)
            #expect(key.withNonce(ctr: v.ctr) { Array(UnsafeRawBufferPointer(start: $0, count: 12)) } == [UInt8](hex: v.nonce))
            #expect(SFrameHeader(kid: v.kid, ctr: v.ctr).bytes + [UInt8](hex: v.metadata) == [UInt8](hex: v.aad))
        }
    }

    @Test func sframeEncryptionVectors() throws {
        for v in SFrameVectors.frames {
            let suite = try #require(SFrameSuite(rawValue: v.suite))
            let key = try SFrameKey(baseKey: KeyMaterial(hex: v.baseKey), kid: v.kid, suite: suite)
            let sealer = SFrameSealer(key: key, firstCounter: v.ctr)
            let metadata = [UInt8](hex: v.metadata), pt = [UInt8](hex: v.pt), ct = [UInt8](hex: v.ct)
            #expect(try sealer.sealArray(pt, metadata: metadata) == ct, "suite \(v.suite)")
            #expect(try SFrameOpener.openArray(ct, metadata: metadata, keys: [v.kid: key]) == pt, "suite \(v.suite)")
            // Without the metadata it was sealed with, the frame does not open.
            #expect(throws: DropReason.noKey) { try SFrameOpener.openArray(ct, keys: [v.kid: key]) }
        }
    }

    /// The cipher's seal as ciphertext ‖ tag, the way the vectors write it.
    private func seal(_ cipher: SFrameCipher, _ suite: SFrameSuite, _ nonce: [UInt8], _ header: [UInt8], _ metadata: [UInt8], _ pt: [UInt8]) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: pt.count + suite.tagCount)
        let ok = nonce.withUnsafeBytes { n in header.withUnsafeBytes { h in metadata.withUnsafeBytes { m in pt.withUnsafeBytes { p in
            out.withUnsafeMutableBytes { o in
                cipher.seal(nonce: n.baseAddress!, header: h, metadata: m, p, ciphertext: o.baseAddress!, tag: o.baseAddress! + pt.count)
            }
        } } } }
        return ok ? out : nil
    }

    private func open(_ cipher: SFrameCipher, _ suite: SFrameSuite, _ nonce: [UInt8], _ header: [UInt8], _ metadata: [UInt8], _ ct: [UInt8]) -> [UInt8]? {
        let count = ct.count - suite.tagCount
        var out = [UInt8](repeating: 0, count: count + 1)  // + 1: a valid address even for 0 bytes
        let ok = nonce.withUnsafeBytes { n in header.withUnsafeBytes { h in metadata.withUnsafeBytes { m in ct.withUnsafeBytes { c in
            out.withUnsafeMutableBytes { o in
                cipher.open(nonce: n.baseAddress!, header: h, metadata: m, UnsafeRawBufferPointer(rebasing: c[..<count]),
                            tag: c.baseAddress! + count, plaintext: o.baseAddress!)
            }
        } } } }
        return ok ? Array(out[..<count]) : nil
    }
}
