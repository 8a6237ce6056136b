import Crypto
import FrameCrypto
import Foundation
import Testing

/// Device identity keys and call-key wrapping (ECALL-WIRE §5), checked against the `openssl`
/// command line in both directions.
struct KeyWrapTests {
    let dir: URL
    init() throws { dir = try OpenSSLTool.temporaryDirectory() }

    func file(_ name: String, _ data: Data? = nil) throws -> String {
        let url = dir.appendingPathComponent(name)
        if let data { try data.write(to: url) }
        return url.path
    }

    func raw(_ key: CallKey) -> Data { key.symmetricKey.withUnsafeBytes { Data($0) } }

    // MARK: - Public key wire forms

    @Test func p256PublicKeyIsRaw64BytesAnd88Base64Characters() throws {
        let id = try DeviceIdentity.generate(.p256)
        let pub = id.publicKey
        #expect(pub.wire.count == 88 && Data(base64Encoded: pub.wire)?.count == 64)
        let parsed = try DevicePublicKey(wire: pub.wire)
        #expect(pub.kind == .p256 && parsed == pub)
        // The hash is SHA-256 of the base64 text, lowercase hex: as `openssl dgst` computes it.
        let digest = String(decoding: try OpenSSLTool.run(["dgst", "-sha256", "-r"], input: Data(pub.wire.utf8)), as: UTF8.self)
        #expect(digest.hasPrefix(pub.hash) && pub.hash.count == 64 && pub.hash == pub.hash.lowercased())
        // The 65-byte form with the 0x04 prefix breaks the apps: refused.
        let prefixed = (Data([4]) + Data(base64Encoded: pub.wire)!).base64EncodedString()
        #expect(throws: IdentityError.self) { try DevicePublicKey(wire: prefixed) }
    }

    @Test func rsaPublicKeyIsPKCS1AndOpenSSLReadsIt() throws {
        let id = try DeviceIdentity.generate(.rsa)
        let pub = id.publicKey
        #expect(pub.wire.count > 150 && pub.kind == .rsa)
        let der = try file("rsa.pub.der", Data(base64Encoded: pub.wire)!)
        // -RSAPublicKey_in: PKCS#1 RSAPublicKey, not SPKI.
        let text = String(decoding: try OpenSSLTool.run(["rsa", "-pubin", "-RSAPublicKey_in", "-inform", "DER", "-in", der, "-noout", "-text"]), as: UTF8.self)
        #expect(text.contains("Public-Key: (2048 bit)"))
    }

    // MARK: - RSA-OAEP both ways

    @Test func rsaWrapOpensWithOpenSSLAndOpenSSLsOpensWithTheBot() throws {
        // openssl's key, the bot wraps for it.
        let theirs = try file("their-rsa.pem")
        try OpenSSLTool.run(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", theirs])
        let theirPub = try DevicePublicKey(wire: try OpenSSLTool.run(["rsa", "-in", theirs, "-RSAPublicKey_out", "-outform", "DER"]).base64EncodedString())
        let key = CallKey.random()
        let wrapped = try KeyWrap.wrap(key, for: theirPub, from: try DeviceIdentity.generate(.p256))
        #expect(Data(base64Encoded: wrapped)?.count == 256 && !wrapped.contains(":"))
        let oaep = ["-pkeyopt", "rsa_padding_mode:oaep", "-pkeyopt", "rsa_oaep_md:sha256", "-pkeyopt", "rsa_mgf1_md:sha256"]
        let opened = try OpenSSLTool.run(["pkeyutl", "-decrypt", "-inkey", theirs, "-in", try file("w.bin", Data(base64Encoded: wrapped)!)] + oaep)
        #expect(opened == raw(key))

        // The bot's key, openssl wraps for it.
        let ours = try DeviceIdentity.generate(.rsa)
        let ourPEM = try file("our-rsa.pem")
        try ours.write(toNewFile: ourPEM)
        let ourPub = try file("our-rsa.pub.pem", try OpenSSLTool.run(["pkey", "-in", ourPEM, "-pubout"]))
        let other = CallKey.random()
        let sealed = try OpenSSLTool.run(["pkeyutl", "-encrypt", "-pubin", "-inkey", ourPub] + oaep, input: raw(other))
        let unwrapped = try KeyWrap.unwrap(sealed.base64EncodedString(), with: ours)
        #expect(raw(unwrapped.key) == raw(other) && unwrapped.sender == nil)
    }

    // MARK: - P-256 ECDH + HKDF + AES-GCM both ways

    @Test func p256WrapOpensWithOpenSSLDerivedKeyAndTheOtherWayRound() throws {
        let theirs = try file("their-p256.pem")
        try OpenSSLTool.run(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", theirs])
        let theirSPKI = try OpenSSLTool.run(["pkey", "-in", theirs, "-pubout", "-outform", "DER"])
        let theirPub = try DevicePublicKey(wire: theirSPKI.suffix(64).base64EncodedString())
        let ours = try DeviceIdentity.generate(.p256)
        let key = CallKey.random()

        // Bot → openssl: "<our public>:<nonce‖ct‖tag>"; openssl derives the same KEK.
        let wrapped = try KeyWrap.wrap(key, for: theirPub, from: ours)
        let parts = wrapped.split(separator: ":").map(String.init)
        #expect(parts.count == 2 && parts[0] == ours.publicKey.wire && Data(base64Encoded: parts[1])?.count == 60)
        let ourSPKI = try file("our.pub.der", OpenSSLTool.spki(p256Raw: Data(base64Encoded: parts[0])!))
        let ourPubPEM = try file("our.pub.pem", try OpenSSLTool.run(["pkey", "-pubin", "-inform", "DER", "-in", ourSPKI]))
        let secret = try OpenSSLTool.run(["pkeyutl", "-derive", "-inkey", theirs, "-peerkey", ourPubPEM])
        #expect(secret.count == 32, "the x-coordinate")
        let kek = SymmetricKey(data: try OpenSSLTool.hkdf(secret: secret, info: "ecall-e2ee-key"))
        let opened = try AES.GCM.open(try AES.GCM.SealedBox(combined: Data(base64Encoded: parts[1])!), using: kek)
        #expect(opened == raw(key))

        // openssl → bot: openssl derives the KEK from its key and ours; the bot opens.
        let ourPEM = try file("our-p256.pem")
        try ours.write(toNewFile: ourPEM)
        let secret2 = try OpenSSLTool.run(["pkeyutl", "-derive", "-inkey", theirs, "-peerkey", ourPubPEM])
        let kek2 = SymmetricKey(data: try OpenSSLTool.hkdf(secret: secret2, info: "ecall-e2ee-key"))
        let other = CallKey.random()
        let box = try AES.GCM.seal(raw(other), using: kek2).combined!
        let unwrapped = try KeyWrap.unwrap(theirPub.wire + ":" + box.base64EncodedString(), with: try DeviceIdentity(contentsOfFile: ourPEM))
        #expect(raw(unwrapped.key) == raw(other))
        #expect(unwrapped.sender == theirPub, "the embedded sender key is reported, for the host check")
    }

    // MARK: - Importing keys

    @Test func importsPEMAndDERInPKCS8SEC1AndPKCS1() throws {
        let ec = try file("ec.pem"), rsa = try file("rsa.pem")
        try OpenSSLTool.run(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", ec])
        try OpenSSLTool.run(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", rsa])
        let ecPub = try OpenSSLTool.run(["pkey", "-in", ec, "-pubout", "-outform", "DER"]).suffix(64).base64EncodedString()
        let rsaPub = try OpenSSLTool.run(["rsa", "-in", rsa, "-RSAPublicKey_out", "-outform", "DER"]).base64EncodedString()
        let forms: [(String, [String], String)] = [
            ("ec PKCS#8 PEM", ["pkey", "-in", ec], ecPub),
            ("ec PKCS#8 DER", ["pkey", "-in", ec, "-outform", "DER"], ecPub),
            ("ec SEC1 PEM", ["ec", "-in", ec], ecPub),
            ("ec SEC1 DER", ["ec", "-in", ec, "-outform", "DER"], ecPub),
            ("rsa PKCS#8 PEM", ["pkey", "-in", rsa], rsaPub),
            ("rsa PKCS#8 DER", ["pkey", "-in", rsa, "-outform", "DER"], rsaPub),
            ("rsa PKCS#1 PEM", ["rsa", "-in", rsa, "-traditional"], rsaPub),
            ("rsa PKCS#1 DER", ["rsa", "-in", rsa, "-traditional", "-outform", "DER"], rsaPub),
        ]
        for (name, args, expected) in forms {
            let encoded = try OpenSSLTool.run(args)
            let id = try DeviceIdentity(encoded: encoded)
            #expect(id.publicKey.wire == expected, "\(name)")
        }
        let locked = try OpenSSLTool.run(["pkey", "-in", ec, "-aes256", "-passout", "pass:x"])
        #expect(throws: IdentityError.encryptedKey) { try DeviceIdentity(encoded: locked) }
        #expect(throws: IdentityError.unsupportedKey) { try DeviceIdentity(encoded: Data("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n".utf8)) }
    }

    @Test func keyFilesAre0600AndNeverOverwritten() throws {
        let id = try DeviceIdentity.generate(.p256)
        let path = try file("identity.pem")
        try id.write(toNewFile: path)
        let mode = (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue
        #expect(mode == 0o600)
        #expect(throws: IdentityError.fileExists(path)) { try DeviceIdentity.generate(.p256).write(toNewFile: path) }
        let reread = try DeviceIdentity(contentsOfFile: path)
        #expect(reread.publicKey == id.publicKey)
        #expect(!"\(id)".contains("PRIVATE") && "\(id)".contains("p256"))
    }

    // MARK: - Failures

    @Test func wrongDeviceAndMalformedInputFailClearly() throws {
        let alice = try DeviceIdentity.generate(.p256), bob = try DeviceIdentity.generate(.p256), carol = try DeviceIdentity.generate(.rsa)
        let forBob = try KeyWrap.wrap(CallKey.random(), for: bob.publicKey, from: alice)
        #expect(throws: KeyWrapError.doesNotOpen) { try KeyWrap.unwrap(forBob, with: alice) }
        #expect(throws: KeyWrapError.wrongIdentity(expected: .p256)) { try KeyWrap.unwrap(forBob, with: carol) }
        let forCarol = try KeyWrap.wrap(CallKey.random(), for: carol.publicKey, from: alice)
        #expect(throws: KeyWrapError.wrongIdentity(expected: .rsa)) { try KeyWrap.unwrap(forCarol, with: bob) }
        #expect(throws: KeyWrapError.doesNotOpen) { try KeyWrap.unwrap(forCarol, with: try DeviceIdentity.generate(.rsa)) }
        // A flipped bit in the GCM tag.
        var bytes = Array(forBob.utf8)
        bytes[bytes.count - 3] = bytes[bytes.count - 3] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        #expect(throws: KeyWrapError.self) { try KeyWrap.unwrap(String(decoding: bytes, as: UTF8.self), with: bob) }
        // Truncations and garbage: an error each time, never a crash.
        for n in 0..<forBob.count {
            #expect(throws: KeyWrapError.self) { try KeyWrap.unwrap(String(forBob.prefix(n)), with: bob) }
        }
        for junk in ["", ":", "::", "a:b", "%%%", String(repeating: "A", count: 344), forBob + ":x"] {
            #expect(throws: KeyWrapError.self) { try KeyWrap.unwrap(junk, with: carol) }
            #expect(throws: KeyWrapError.self) { try KeyWrap.unwrap(junk, with: bob) }
        }
    }
}
