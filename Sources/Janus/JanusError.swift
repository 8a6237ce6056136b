/// Why talking to Janus failed, in words that say what to check.
public enum JanusError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No WebSocket connection (refused, wrong URL, Janus not running).
    case unreachable(url: String, reason: String)
    /// The connection closed while a request was pending or later.
    case disconnected
    /// Janus did not answer within the timeout.
    case timeout(request: String)
    /// A Janus core error (`janus: error`), e.g. 403 unauthorized, 458 session not found.
    case janus(code: Int, reason: String)
    /// A plugin error (`error_code` in plugin data), e.g. VideoRoom 426 no such room.
    case plugin(code: Int, reason: String)
    /// Janus sent something this client cannot understand.
    case protocolViolation(String)

    public var description: String {
        switch self {
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
