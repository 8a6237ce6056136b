import PrivateIO
import Crypto
public import Foundation

/// The recorder's signing key: P-256 ECDSA (SHA-256, DER signatures) or Ed25519. Stored as a
/// PKCS#8 PEM file, 0600; a file others can read is refused. The public key is named by its
/// SubjectPublicKeyInfo DER, and its fingerprint is that DER's SHA-256 in hex.
public struct SigningKey: Sendable {
    public enum Kind: String, Sendable, CaseIterable { case p256, ed25519 }

    enum Key: @unchecked Sendable {
        // @unchecked: both key types are immutable values.
        case p256(P256.Signing.PrivateKey)
        case ed25519(Curve25519.Signing.PrivateKey)
    }

    let key: Key

    public static func generate(_ kind: Kind) -> SigningKey {
        switch kind {
        case .p256: SigningKey(key: .p256(P256.Signing.PrivateKey()))
        case .ed25519: SigningKey(key: .ed25519(Curve25519.Signing.PrivateKey()))
        }
    }

    public var kind: Kind {
        if case .p256 = key { return .p256 }
        return .ed25519
    }

    public var publicKey: VerifyingKey {
        switch key {
        case .p256(let k): VerifyingKey(key: .p256(k.publicKey))
        case .ed25519(let k): VerifyingKey(key: .ed25519(k.publicKey))
        }
    }

    /// P-256: ECDSA with SHA-256, the signature in DER (X9.62 Ecdsa-Sig-Value); Ed25519: the
    /// 64-byte signature of RFC 8032.
    public func sign(_ data: Data) throws -> Data {
        switch key {
        case .p256(let k): try k.signature(for: data).derRepresentation
        case .ed25519(let k): try k.signature(for: data)
        }
    }

    /// PKCS#8 PEM (`PRIVATE KEY`).
    public var pemRepresentation: String {
        switch key {
        case .p256(let k): return k.pemRepresentation
        case .ed25519(let k):
            let der = Data(Self.ed25519PKCS8Prefix) + k.rawRepresentation
            let lines = der.base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
            return "-----BEGIN PRIVATE KEY-----\n\(lines)\n-----END PRIVATE KEY-----"
        }
    }

    /// RFC 8410 PKCS#8 of an Ed25519 key: this prefix, then the 32-byte seed.
    static let ed25519PKCS8Prefix: [UInt8] = [0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20]

    public init(pem text: String) throws(SigningKeyError) {
        if text.contains("ENCRYPTED") { throw .init("an encrypted key: give it unencrypted (the file is kept 0600)") }
        if let k = try? P256.Signing.PrivateKey(pemRepresentation: text) { self.init(key: .p256(k)); return }
        let body = text.split(whereSeparator: \.isNewline).filter { !$0.hasPrefix("-----") }.joined()
        if let der = Data(base64Encoded: body), der.count == 48, Array(der.prefix(16)) == Self.ed25519PKCS8Prefix,
           let k = try? Curve25519.Signing.PrivateKey(rawRepresentation: der.suffix(32)) {
            self.init(key: .ed25519(k))
            return
        }
        throw .init("not a P-256 or Ed25519 private key in PEM (PKCS#8 or SEC1)")
    }

    init(key: Key) { self.key = key }

    /// Reads a key file, refusing one that is not a regular file or that others can read.
    public init(contentsOfFile path: String) throws(SigningKeyError) {
        let bytes: [UInt8]
        do { bytes = try PrivateFile.read(path, what: "the signing key", maxBytes: 16384).bytes } catch { throw .init(error.description) }
        try self.init(pem: String(decoding: bytes, as: UTF8.self))
    }

    /// Writes the key to a new file created 0600 (never over an existing one).
    public func write(toNewFile path: String) throws(SigningKeyError) {
        do { try PrivateFile.createNew(path, what: "the signing key", contents: Array((pemRepresentation + "\n").utf8)) } catch {
            throw .init(error.description)
        }
    }

    /// The key in `path`, or a new one of `kind` written there (0600) if there is none.
    public static func loadOrCreate(_ path: String, kind: Kind = .p256) throws(SigningKeyError) -> SigningKey {
        if access(path, F_OK) == 0 { return try SigningKey(contentsOfFile: path) }
        let key = generate(kind)
        try key.write(toNewFile: path)
        return key
    }
}

public struct SigningKeyError: Error, CustomStringConvertible {
    public let description: String
    init(_ d: String) { description = d }
}
