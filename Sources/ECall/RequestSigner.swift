import Crypto
public import Foundation

/// ECall's request signature (ECALL-WIRE §7): `X-Signature` = lowercase hex HMAC-SHA256 with the
/// API hash secret over apiId + METHOD + path (no query; "/" if empty) + body + nonce, where the
/// nonce (`X-Nonce`) is the Unix time in seconds.
public struct RequestSigner: Sendable {
    public let apiID: String
    private let secret: [UInt8]

    public init(apiID: String, secret: String) {
        self.apiID = apiID
        self.secret = Array(secret.utf8)
    }

    public func signature(method: String, path: String, body: Data, nonce: String) -> String {
        var message = Data((apiID + method.uppercased() + (path.isEmpty ? "/" : path)).utf8)
        message.append(body)
        message.append(Data(nonce.utf8))
        return HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: secret)).map { String(format: "%02x", $0) }.joined()
    }

    /// The three headers for a request made now.
    public func headers(method: String, path: String, body: Data, now: Date = Date()) -> [(String, String)] {
        let nonce = String(Int64(now.timeIntervalSince1970))
        return [("X-Api-Id", apiID), ("X-Nonce", nonce), ("X-Signature", signature(method: method, path: path, body: body, nonce: nonce))]
    }
}
