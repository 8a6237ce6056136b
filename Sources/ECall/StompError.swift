/// Why STOMP failed, in words that say what to do. A struct with a private kind so cases can be
/// added; callers classify it with the `is…` properties instead of matching cases.
public struct StompError: Error, Equatable, CustomStringConvertible, Sendable {
    private enum Kind: Equatable, Sendable {
        case unreachable(String)
        case refused(String)
        case credentials(String)
        case notConnected
        case closed
    }
    private let kind: Kind

    /// The WebSocket could not be opened, or no CONNECTED came in time.
    public static func unreachable(_ why: String) -> Self { .init(kind: .unreachable(why)) }
    /// The server sent ERROR to our CONNECT (bad login or token, unknown vhost).
    public static func refused(_ why: String) -> Self { .init(kind: .refused(why)) }
    /// The credentials callback failed.
    public static func credentials(_ why: String) -> Self { .init(kind: .credentials(why)) }
    /// A send while the connection is down (it is being re-established).
    public static let notConnected = Self(kind: .notConnected)
    /// The client was closed (before or while it connected).
    public static let closed = Self(kind: .closed)

    /// The server refused our login.
    public var isRefused: Bool {
        if case .refused = kind { true } else { false }
    }

    /// The server could not be reached or the connection is down: worth retrying later.
    public var isConnectionProblem: Bool {
        switch kind {
        case .unreachable, .notConnected: true
        case .refused, .credentials, .closed: false
        }
    }

    public var description: String {
        switch kind {
        case .unreachable(let why): "STOMP server unreachable: \(why) (check the STOMP URL and that RabbitMQ's Web-STOMP is up)"
        case .refused(let why): "STOMP server refused the connection: \(why) (check the device login and RabbitMQ token)"
        case .credentials(let why): "could not get STOMP credentials: \(why) (the ECall backend's /credentials must answer)"
        case .notConnected: "STOMP is not connected (reconnecting): the message was not sent, send it again later"
        case .closed: "the STOMP client was closed: make a new one to connect again"
        }
    }
}
