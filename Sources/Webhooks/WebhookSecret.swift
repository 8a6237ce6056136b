import Foundation
import Crypto
import PrivateIO

/// A Standard Webhooks signing secret: `whsec_` and the base64 of the key, kept in a file no one
/// else can read. The key never appears in a description or a log.
public struct WebhookSecret: Sendable, CustomStringConvertible {
    // The key's bytes: swift-crypto's SymmetricKey is not Sendable.
    let key: [UInt8]

    public init(_ text: String) throws(WebhookError) {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard trimmed.hasPrefix("whsec_"), let key = Data(base64Encoded: String(trimmed.dropFirst(6))), key.count >= 24 else {
            throw WebhookError(.secret("the webhook secret must be whsec_ and the base64 of 24 to 64 random bytes (e.g. `echo whsec_$(head -c 32 /dev/urandom | base64)`)"))
        }
        self.key = Array(key)
    }

    /// From a 0600 file (PrivateFile's rules).
    public static func read(file path: String) throws(WebhookError) -> WebhookSecret {
        let contents: PrivateFile.Contents
        do { contents = try PrivateFile.read(path, what: "--webhook-secret-file", maxBytes: 4096) } catch {
            throw WebhookError(.secret("\(error)"))
        }
        return try WebhookSecret(String(decoding: contents.bytes, as: UTF8.self))
    }

    public var description: String { "webhook secret (\(key.count) bytes)" }

    /// `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`, the `webhook-signature` header.
    public func signature(id: String, timestamp: Int, body: [UInt8]) -> String {
        var message = Data("\(id).\(timestamp).".utf8)
        message.append(contentsOf: body)
        return "v1," + Data(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: key))).base64EncodedString()
    }
}

/// Why webhooks cannot be set up or sent, and what to do.
public struct WebhookError: Error, CustomStringConvertible, Sendable {
    enum Reason: Sendable {
        case secret(String), url(String), event(String)
    }

    let reason: Reason
    init(_ reason: Reason) { self.reason = reason }

    public var description: String {
        switch reason {
        case .secret(let why): "webhook secret: \(why)"
        case .url(let why): "--webhook-url: \(why)"
        case .event(let why): "webhook event: \(why)"
        }
    }
}
