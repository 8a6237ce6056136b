/// Why talking to Janus failed, in words that say what to check.
///
/// A struct with a private kind, so kinds can be added without breaking callers: build one with
/// the static constructors, classify one with `isConnectionProblem`, `janusCode`, `pluginCode`.
public struct JanusError: Error, Sendable, Equatable, CustomStringConvertible {
    private enum Kind: Sendable, Equatable {
        case unreachable(url: String, reason: String)
        case disconnected
        case timeout(request: String)
        case janus(code: Int, reason: String)
        case plugin(code: Int, reason: String)
        case protocolViolation(String)
    }
    private let kind: Kind

    /// No WebSocket connection (refused, wrong URL, Janus not running).
    public static func unreachable(url: String, reason: String) -> Self { .init(kind: .unreachable(url: url, reason: reason)) }
    /// The connection closed while a request was pending or later, or the session was closed.
    public static let disconnected = Self(kind: .disconnected)
    /// Janus did not answer within the timeout.
    public static func timeout(request: String) -> Self { .init(kind: .timeout(request: request)) }
    /// A Janus core error (`janus: error`), e.g. 403 unauthorized, 458 session not found.
    public static func janus(code: Int, reason: String) -> Self { .init(kind: .janus(code: code, reason: reason)) }
    /// A plugin error (`error_code` in plugin data), e.g. VideoRoom 426 no such room.
    public static func plugin(code: Int, reason: String) -> Self { .init(kind: .plugin(code: code, reason: reason)) }
    /// Janus sent something this client cannot understand.
    public static func protocolViolation(_ message: String) -> Self { .init(kind: .protocolViolation(message)) }

    /// Janus could not be reached, the connection closed, or Janus did not answer in time:
    /// retrying later (or checking that Janus runs) may help, unlike for a refused request.
    public var isConnectionProblem: Bool {
        switch kind {
        case .unreachable, .disconnected, .timeout: true
        case .janus, .plugin, .protocolViolation: false
        }
    }

    /// The connection could not be opened at all (as opposed to lost later).
    public var isUnreachable: Bool {
        if case .unreachable = kind { true } else { false }
    }

    /// The code of a Janus core error (e.g. 403, 458), nil for every other failure.
    public var janusCode: Int? {
        if case .janus(let code, _) = kind { code } else { nil }
    }

    /// The code of a plugin error (e.g. VideoRoom 426 no such room), nil for every other failure.
    public var pluginCode: Int? {
        if case .plugin(let code, _) = kind { code } else { nil }
    }

    public var description: String {
        switch kind {
        case .unreachable(let url, let reason): "Janus unreachable at \(url) (\(reason)): is it running, and is the URL ws://HOST:PORT?"
        case .disconnected: "the connection to Janus closed"
        case .timeout(let r): "Janus did not answer '\(r)' in time"
        case .janus(let code, let reason):
            code == 403 ? "Janus refused the request (403 \(reason)): check --api-secret / --token" : "Janus error \(code): \(reason)"
        case .plugin(let code, let reason):
            code == 426 ? "no such room (VideoRoom 426: \(reason)): create it first or check --room" : "VideoRoom error \(code): \(reason)"
        case .protocolViolation(let m): "unexpected message from Janus: \(m)"
        }
    }
}
