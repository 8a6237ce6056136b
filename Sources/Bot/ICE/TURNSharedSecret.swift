internal import Crypto
public import Foundation

/// coturn's REST API credentials (`use-auth-secret` with `static-auth-secret`): the username is
/// `<expiry unix time>:<user>`, the password base64(HMAC-SHA1(secret, username)). coturn checks
/// the HMAC and refuses the username once its time has passed.
public struct TURNSharedSecret: Sendable {
    // Bytes, not a SymmetricKey (not Sendable); the key is made for each credential.
    private let secret: [UInt8]
    public let user: String
    public let lifetime: Duration

    public init(secret: [UInt8], user: String, lifetime: Duration = .seconds(86_400)) {
        self.secret = secret
        self.user = user
        self.lifetime = lifetime
    }

    /// The credential valid from `now` for `lifetime`.
    public func credential(now: Date) -> (username: String, password: String) {
        let expiry = Int(now.timeIntervalSince1970) + Int(lifetime.components.seconds)
        let username = "\(expiry):\(user)"
        return (username, Self.password(username: username, secret: secret))
    }

    /// The password for `username` under `secret` (public for a known-answer test).
    public static func password(username: String, secret: [UInt8]) -> String {
        let mac = HMAC<Insecure.SHA1>.authenticationCode(for: Data(username.utf8), using: SymmetricKey(data: secret))
        return Data(mac).base64EncodedString()
    }
}
