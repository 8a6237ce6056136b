import Crypto
public import Foundation

/// A public signing key as the proof names it: its SubjectPublicKeyInfo DER (base64 in JSON).
public struct VerifyingKey: Sendable, Equatable {
    enum Key: @unchecked Sendable {
        // @unchecked: both key types are immutable values.
        case p256(P256.Signing.PublicKey)
        case ed25519(Curve25519.Signing.PublicKey)
    }

    let key: Key

    /// RFC 8410 SubjectPublicKeyInfo of an Ed25519 key: this prefix, then the 32 raw bytes.
    static let ed25519SPKIPrefix: [UInt8] = [0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00]

    /// `ecdsa-p256-sha256` or `ed25519`, as the proof's `algorithm` says.
    public var algorithm: String {
        if case .p256 = key { return "ecdsa-p256-sha256" }
        return "ed25519"
    }

    /// SubjectPublicKeyInfo, DER.
    public var der: Data {
        switch key {
        case .p256(let k): k.derRepresentation
        case .ed25519(let k): Data(Self.ed25519SPKIPrefix) + k.rawRepresentation
        }
    }

    /// SHA-256 of the DER, lower-case hex.
    public var fingerprint: String { Hex.sha256(der) }

    public var pem: String {
        let lines = der.base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
        return "-----BEGIN PUBLIC KEY-----\n\(lines)\n-----END PUBLIC KEY-----"
    }

    public init(der: Data) throws(SigningKeyError) {
        if der.count == 44, Array(der.prefix(12)) == Self.ed25519SPKIPrefix,
           let k = try? Curve25519.Signing.PublicKey(rawRepresentation: der.suffix(32)) {
            key = .ed25519(k)
        } else if let k = try? P256.Signing.PublicKey(derRepresentation: der) {
            key = .p256(k)
        } else {
            throw .init("not a P-256 or Ed25519 public key (SubjectPublicKeyInfo DER)")
        }
    }

    /// A public key file in PEM, or the private key file (its public half).
    public init(contentsOfFile path: String) throws(SigningKeyError) {
        guard let data = FileManager.default.contents(atPath: path) else { throw .init("cannot read \(path)") }
        let text = String(decoding: data, as: UTF8.self)
        if text.contains("PRIVATE KEY") {
            self = try SigningKey(contentsOfFile: path).publicKey
            return
        }
        let body = text.split(whereSeparator: \.isNewline).filter { !$0.hasPrefix("-----") }.joined()
        guard let der = Data(base64Encoded: body) else { throw .init("\(path) is not a PEM public key") }
        try self.init(der: der)
    }

    init(key: Key) { self.key = key }

    public func isValid(_ signature: Data, for data: Data) -> Bool {
        switch key {
        case .p256(let k):
            guard let s = try? P256.Signing.ECDSASignature(derRepresentation: signature) else { return false }
            return k.isValidSignature(s, for: data)
        case .ed25519(let k): return k.isValidSignature(signature, for: data)
        }
    }

    public static func == (a: VerifyingKey, b: VerifyingKey) -> Bool { a.der == b.der }
}

public enum Hex {
    public static func string(_ bytes: some Sequence<UInt8>) -> String {
        // A table, not String(format:): verify hashes every line of a file of any size.
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for b in bytes { out.append(digits[Int(b >> 4)]); out.append(digits[Int(b & 0x0F)]) }
        return String(decoding: out, as: UTF8.self)
    }

    public static func sha256(_ data: Data) -> String { string(SHA256.hash(data: data)) }
}
