import PrivateIO
import Crypto
public import Foundation
import _CryptoExtras

/// A device's identity key (ECALL-WIRE §5): P-256 key agreement (preferred) or RSA-2048. The
/// private key never leaves this type except as the 0600 file it is written to.
public struct DeviceIdentity: Sendable, CustomStringConvertible {
    public enum Kind: String, Sendable, CaseIterable {
        case p256, rsa
    }

    enum Key: @unchecked Sendable {
        // @unchecked: both key types are immutable values.
        case p256(P256.KeyAgreement.PrivateKey)
        case rsa(_RSA.Encryption.PrivateKey)
    }

    let key: Key

    init(key: Key) { self.key = key }

    /// A new key of `kind` (RSA: 2048 bits, as the apps use).
    public static func generate(_ kind: Kind) throws(IdentityError) -> DeviceIdentity {
        switch kind {
        case .p256: return DeviceIdentity(key: .p256(P256.KeyAgreement.PrivateKey()))
        case .rsa:
            do { return DeviceIdentity(key: .rsa(try _RSA.Encryption.PrivateKey(keySize: .bits2048))) } catch { throw .generationFailed }
        }
    }

    /// A private key in PEM (PKCS#8 `PRIVATE KEY`, SEC1 `EC PRIVATE KEY` or PKCS#1 `RSA PRIVATE KEY`)
    /// or DER (the same three structures).
    public init(encoded data: Data) throws(IdentityError) {
        if let text = String(data: data, encoding: .utf8), text.contains("-----BEGIN") {
            if text.contains("ENCRYPTED") { throw .encryptedKey }
            if let k = try? P256.KeyAgreement.PrivateKey(pemRepresentation: text) { self.init(key: .p256(k)); return }
            if let k = try? _RSA.Encryption.PrivateKey(pemRepresentation: text) { self.init(key: .rsa(k)); return }
        } else {
            if let k = try? P256.KeyAgreement.PrivateKey(derRepresentation: data) { self.init(key: .p256(k)); return }
            if let k = try? _RSA.Encryption.PrivateKey(derRepresentation: data) { self.init(key: .rsa(k)); return }
        }
        throw .unsupportedKey
    }

    /// Reads a key file (PEM or DER).
    public init(contentsOfFile path: String) throws(IdentityError) {
        guard let data = FileManager.default.contents(atPath: path) else { throw .unreadableFile(path) }
        try self.init(encoded: data)
    }

    public var kind: Kind {
        switch key {
        case .p256: .p256
        case .rsa: .rsa
        }
    }

    /// The public key as ECall sends it.
    public var publicKey: DevicePublicKey {
        switch key {
        case .p256(let k): DevicePublicKey(uncheckedWire: k.publicKey.rawRepresentation.base64EncodedString())
        case .rsa(let k): DevicePublicKey(uncheckedWire: k.publicKey.pkcs1DERRepresentation.base64EncodedString())
        }
    }

    /// PKCS#8 PEM, the form `keys generate` and `keys import` store.
    public var pkcs8PEM: String {
        switch key {
        case .p256(let k): k.pemRepresentation
        case .rsa(let k): k.pkcs8PEMRepresentation
        }
    }

    /// Writes the key as PKCS#8 PEM to a new file created with mode 0600 (never over an existing one).
    public func write(toNewFile path: String) throws(IdentityError) {
        do { try PrivateFile.createNew(path, what: "the identity key", contents: Array(pkcs8PEM.utf8)) } catch {
            if error.reason == .exists { throw .fileExists(path) }
            throw .unwritableFile(path, error.description)
        }
    }

    public var description: String { "DeviceIdentity(\(kind.rawValue), public \(publicKey.hash.prefix(16))…)" }
}

/// A device public key in ECall's wire form: base64 of the raw 64-byte P-256 point X‖Y, or of an
/// RSA PKCS#1 `RSAPublicKey` DER.
public struct DevicePublicKey: Sendable, Hashable, CustomStringConvertible {
    public let wire: String

    init(uncheckedWire: String) { wire = uncheckedWire }

    /// Checks that `wire` is a key of the kind its length says (< 150 characters: P-256).
    public init(wire: String) throws(IdentityError) {
        self.wire = wire
        guard let bytes = Data(base64Encoded: wire) else { throw .badPublicKey("not base64") }
        switch kind {
        case .p256:
            // 65 bytes (with the 0x04 prefix) breaks the apps: only the raw 64 are ECall's form.
            guard bytes.count == 64, (try? P256.KeyAgreement.PublicKey(rawRepresentation: bytes)) != nil else {
                throw .badPublicKey("a P-256 key is 64 raw bytes X‖Y, got \(bytes.count)")
            }
        case .rsa:
            guard (try? _RSA.Encryption.PublicKey(derRepresentation: bytes)) != nil else { throw .badPublicKey("not an RSA PKCS#1 public key of 2048 bits or more") }
        }
    }

    /// ECALL-WIRE §5: shorter than 150 characters is P-256, else RSA.
    public var kind: DeviceIdentity.Kind { wire.count < 150 ? .p256 : .rsa }

    /// `publicKeyHash`: lowercase hex SHA-256 of the base64 string's UTF-8 bytes.
    public var hash: String { SHA256.hash(data: Data(wire.utf8)).map { String(format: "%02x", $0) }.joined() }

    public var description: String { wire }
}

/// Why an identity key could not be made, read or used. The message says what to do.
public enum IdentityError: Error, Equatable, CustomStringConvertible {
    case generationFailed
    case encryptedKey
    case unsupportedKey
    case unreadableFile(String)
    case unwritableFile(String, String)
    case fileExists(String)
    case badPublicKey(String)

    public var description: String {
        switch self {
        case .generationFailed: "could not generate the key"
        case .encryptedKey: "the key file is password-protected: export it unencrypted (e.g. openssl pkey -in KEY -out PLAIN)"
        case .unsupportedKey: "not a P-256 or RSA (2048+) private key in PEM or DER (PKCS#8, SEC1 or PKCS#1)"
        case .unreadableFile(let p): "cannot read key file \(p): check the path and its permissions"
        case .unwritableFile(let p, let why): "cannot write key file \(p): \(why)"
        case .fileExists(let p): "\(p) already exists: move it away or choose another folder (keys are never overwritten)"
        case .badPublicKey(let why): "bad device public key: \(why)"
        }
    }
}
