import Crypto
import Foundation
import _CryptoExtras

/// The call key wrapped for one device (`encryptedAESKey`, ECALL-WIRE §5).
///
/// P-256 form `"<senderPublicKey>:<wrapped>"`: KEK = HKDF-SHA256(ECDH x-coordinate, salt empty,
/// info "ecall-e2ee-key", 32 bytes); wrapped = AES-256-GCM(KEK) of the key as nonce‖ct‖tag (60 bytes).
/// RSA form: base64 of RSA-OAEP (SHA-256, MGF1-SHA-256, empty label).
public enum KeyWrap {
    static let info = Data("ecall-e2ee-key".utf8)

    /// A call key opened from its wrapped form.
    public struct Unwrapped: Sendable {
        public let key: CallKey
        /// P-256 form: the sender key embedded before the colon. The apps do not authenticate
        /// it: compare it with the key host's published key before trusting a rotation.
        public let sender: DevicePublicKey?
    }

    /// Wraps `callKey` for `recipient`. A P-256 recipient gets the P-256 form, agreed with
    /// `sender`'s key (with a one-off P-256 key if `sender` is an RSA identity); an RSA recipient
    /// gets OAEP.
    public static func wrap(_ callKey: CallKey, for recipient: DevicePublicKey, from sender: DeviceIdentity) throws(KeyWrapError) -> String {
        let raw = callKey.symmetricKey.withUnsafeBytes { Data($0) }
        guard let peer = Data(base64Encoded: recipient.wire) else { throw .malformed("the recipient key is not base64") }
        switch recipient.kind {
        case .p256:
            let own: P256.KeyAgreement.PrivateKey = if case .p256(let k) = sender.key { k } else { P256.KeyAgreement.PrivateKey() }
            do {
                let kek = try keyEncryptionKey(own, peer: try P256.KeyAgreement.PublicKey(rawRepresentation: peer))
                guard let sealed = try AES.GCM.seal(raw, using: kek).combined else { throw KeyWrapError.malformed("no combined form") }
                return own.publicKey.rawRepresentation.base64EncodedString() + ":" + sealed.base64EncodedString()
            } catch { throw .malformed("the recipient's P-256 key is not usable: \(error)") }
        case .rsa:
            do {
                let key = try _RSA.Encryption.PublicKey(derRepresentation: peer)
                return try key.encrypt(raw, padding: .PKCS1_OAEP_SHA256).base64EncodedString()
            } catch { throw .malformed("the recipient's RSA key is not usable: \(error)") }
        }
    }

    /// Opens an `encryptedAESKey` with this device's identity.
    public static func unwrap(_ wrapped: String, with identity: DeviceIdentity) throws(KeyWrapError) -> Unwrapped {
        if let colon = wrapped.firstIndex(of: ":") {
            guard case .p256(let own) = identity.key else { throw .wrongIdentity(expected: .p256) }
            let senderWire = String(wrapped[..<colon])
            guard let senderRaw = Data(base64Encoded: senderWire), senderRaw.count == 64,
                  let sender = try? P256.KeyAgreement.PublicKey(rawRepresentation: senderRaw) else {
                throw .malformed("the sender key before ':' is not a 64-byte P-256 key")
            }
            guard let box = Data(base64Encoded: String(wrapped[wrapped.index(after: colon)...])), box.count == 60 else {
                throw .malformed("the wrapped key after ':' is not 60 bytes of base64")
            }
            do {
                let kek = try keyEncryptionKey(own, peer: sender)
                let key = try AES.GCM.open(try AES.GCM.SealedBox(combined: box), using: kek)
                return Unwrapped(key: try CallKey(bytes: key), sender: DevicePublicKey(uncheckedWire: senderWire))
            } catch { throw .doesNotOpen }
        }
        guard case .rsa(let own) = identity.key else { throw .wrongIdentity(expected: .rsa) }
        guard let box = Data(base64Encoded: wrapped), box.count == own.keySizeInBits / 8 else {
            throw .malformed("an RSA-wrapped key is \(own.keySizeInBits / 8) bytes of base64")
        }
        do {
            return Unwrapped(key: try CallKey(bytes: try own.decrypt(box, padding: .PKCS1_OAEP_SHA256)), sender: nil)
        } catch { throw .doesNotOpen }
    }

    static func keyEncryptionKey(_ own: P256.KeyAgreement.PrivateKey, peer: P256.KeyAgreement.PublicKey) throws -> SymmetricKey {
        // swift-crypto's shared secret for NIST curves is the x-coordinate, as ECALL-WIRE §5 says.
        try own.sharedSecretFromKeyAgreement(with: peer)
            .hkdfDerivedSymmetricKey(using: SHA256.self, salt: Data(), sharedInfo: info, outputByteCount: 32)
    }
}

/// Why a wrapped call key could not be made or opened.
public enum KeyWrapError: Error, Equatable, CustomStringConvertible {
    case malformed(String)
    case wrongIdentity(expected: DeviceIdentity.Kind)
    case doesNotOpen

    public var description: String {
        switch self {
        case .malformed(let why): "malformed wrapped key: \(why)"
        case .wrongIdentity(let kind): "the key was wrapped for a \(kind == .p256 ? "P-256" : "RSA") identity, and this device's is not"
        case .doesNotOpen: "the wrapped key does not open with this device's identity (wrapped for another device?)"
        }
    }
}
