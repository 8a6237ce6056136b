public import Proof

extension AgentConfig {
    /// The agent's device identity key as its recorder signing key: one key the operator already
    /// keeps 0600 and ECall knows, so the recordings' signer is the device that was invited. A
    /// P-256 identity signs (ECDSA, as `--signing-key` would); an RSA one cannot (Proof signs
    /// with P-256 or Ed25519) and throws.
    public func identitySigningKey() throws(SigningKeyError) -> SigningKey {
        try SigningKey(contentsOfFile: identity)
    }
}
