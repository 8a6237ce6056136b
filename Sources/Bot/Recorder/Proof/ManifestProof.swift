public import Foundation
public import Proof

/// manifest.json's `proof`: what the recorder's signing key signs of a finished recording.
/// The signature covers the whole manifest (this section included, `signature` removed) in
/// RFC 8785 canonical form: docs/proof.md.
public struct ManifestProof: Codable, Sendable {
    /// 2: `recording` is signed here and in every checkpoint, the last of which is `final`.
    public var version = RecordingIdentity.format
    /// The recording the checkpoints name (nil for `mjr decrypt`, which has none).
    public var recording: RecordingIdentity? = nil
    /// `ecdsa-p256-sha256` or `ed25519`.
    public var algorithm: String
    /// SubjectPublicKeyInfo DER, base64.
    public var publicKey: String
    /// SHA-256 of the public key's DER, hex.
    public var fingerprint: String
    public var signedAt: Date
    /// Every file the manifest lists (tracks and the mix), as finished and read back.
    public var files: [File]
    public var participants: [Participant]
    public var keyEpochs: [KeyEpoch]
    public var gaps: [RecordingManifest.Gap]
    /// The last checkpoint of `proof.jsonl`: the chain ends here.
    public var chain: Chain?
    /// Over the canonical manifest without this member; base64 (P-256: DER ECDSA-Sig-Value).
    public var signature: String?
    /// `mjr decrypt`: the `.mjr` files decrypted (absolute paths), as they were read.
    public var inputs: [File]? = nil

    public struct File: Codable, Sendable {
        public var name: String
        public var bytes: Int
        public var sha256: String
    }

    public struct Participant: Codable, Sendable {
        public var userID: String
        public var display: String
        public var files: [String]
        /// Frames opened (decrypted) across their tracks.
        public var frames: Int
        enum CodingKeys: String, CodingKey { case userID = "user_id", display, files, frames }
    }

    /// Which key opened a track's frames, and when (never the key itself): `key` is the sender's
    /// key index (`--key-map`), or `call` for the one call key.
    public struct KeyEpoch: Codable, Sendable {
        public var feedID: Int64
        public var key: String
        public var from: Date?
        public var to: Date?
        public var frames: Int
        enum CodingKeys: String, CodingKey { case feedID = "feed_id", key, from, to, frames }
    }

    public struct Chain: Codable, Sendable {
        public var checkpoints: Int
        /// SHA-256 of the last checkpoint's line (without its line end), hex.
        public var last: String
    }

    enum CodingKeys: String, CodingKey {
        case version, algorithm, publicKey = "public_key", fingerprint, signedAt = "signed_at", files, participants
        case keyEpochs = "key_epochs", gaps, chain, signature, inputs, recording
    }
}
