public import Foundation
import Hummingbird
public import Logging
import Synchronization
import ECall
import Locking

/// A STAND-IN for the ECall backend, for tests and local runs: nobody can run the real one here.
/// It serves the REST subset sfubot uses (ECALL-WIRE §7) and checks what the real one checks:
/// the request signature (`X-Api-Id`, `X-Nonce` within 5 minutes, `X-Signature`), bearer tokens
/// and their expiry (`ErrAccessTokenExpired`), the OTP, and that a registered key's hash matches.
/// State lives in memory.
public final class ECallStandIn: Sendable {
    public struct Configuration: Sendable {
        public var apiID = "sfubot-dev"
        public var apiSecret = "sfubot-dev-secret"
        /// The one-time code every login accepts.
        public var otp = "123456"
        public var accessTokenLifetime: TimeInterval = 900
        /// Where `/credentials` points STOMP clients.
        public var stompURL = "ws://127.0.0.1:15674/ws/"
        /// How long a RabbitMQ token from `/credentials` is good for.
        public var rabbitTokenLifetime: TimeInterval = 3600
        /// The coturn `/credentials` points to. Nil: no TURN (empty username and password).
        public var turn: TURN?
        public var turnLifetime: TimeInterval = 86_400
        public init() {}
    }

    /// A coturn with its shared secret (`use-auth-secret`): each `/credentials` answer carries
    /// fresh REST API credentials, valid for `turnLifetime`.
    public struct TURN: Sendable {
        public var secret: String
        /// Its `turn:` URL, `/credentials`' `noneTlsUrl`; nil: none.
        public var url: String?
        /// Its `tls-listening-port`: `/credentials`' `tlsUrl` is then
        /// `turns:127.0.0.1:PORT?transport=tcp`, as ECall's backend gives. Nil: `tlsUrl` is the
        /// Web-STOMP URL, as this stand-in gave before it served TURN over TLS.
        public var tlsPort: Int?
        public init(url: String?, secret: String, tlsPort: Int? = nil) {
            self.url = url
            self.secret = secret
            self.tlsPort = tlsPort
        }
    }

    public let configuration: Configuration
    let state = Locked(State())
    let log: Logger
    private let server = Locked<Task<Void, any Error>?>(nil)
    /// The STOMP client that routes signal messages (`startRouting`).
    let router = Locked<StompClient?>(nil)

    /// What a test can look at afterwards.
    public struct Counters: Sendable, Equatable {
        public var badSignatures = 0
        public var expiredTokens = 0
        public var refreshes = 0
        /// RabbitMQ logins the backend refused (unknown or expired token).
        public var refusedBrokerLogins = 0
        /// Signal messages passed from ecall.signal.in to a device, and refused (no valid bearer
        /// token, not JSON, no recipient).
        public var signalsRouted = 0
        public var signalsRefused = 0
        /// `participant_request_rejoin` messages sent to the other connected participants of a
        /// call after a `request-rejoin`, and those that could not be sent (no routing).
        public var rejoinRequestsSent = 0
        public var rejoinRequestsUnsent = 0
    }

    public var counters: Counters { state.withLock { $0.counters } }

    /// One REST request as the stand-in answered it: who (from the bearer token, if any) asked
    /// for what, and the HTTP status. Tests assert on the order of a client's calls.
    public struct RESTCall: Sendable, Equatable {
        public var method: String
        /// The URL path, `/app/api/...`.
        public var path: String
        public var userId: Int64?
        public var deviceId: Int64?
        public var status: Int
    }

    /// The REST requests answered so far, oldest first (the last 1,000: a local run polls forever).
    public var restCalls: [RESTCall] { state.withLock { $0.restCalls } }
    static let restCallLimit = 1000

    /// Makes call `id`'s CallRecord name another Janus room from now on (as a backend that
    /// moved the call would): a participant that rejoins must join the room `rejoin` returns.
    public func moveCall(_ id: Int64, toJanusRoom room: Int64) {
        state.withLock { $0.calls[id]?.janusRoomId = room }
    }

    public init(configuration: Configuration = .init(), logger: Logger = Logger(label: "ecall-standin")) {
        self.configuration = configuration
        log = logger
    }

    /// Serves on 127.0.0.1 (port 0: any free one) and returns the API base URL, `…/app/api`.
    public func start(port: Int = 0) async throws -> String {
        let (ports, bound) = AsyncStream.makeStream(of: Int.self)
        let app = Application(
            responder: CallbackResponder { [self] (request: Request, _: BasicRequestContext) in try await self.respond(request) },
            configuration: .init(address: .hostname("127.0.0.1", port: port), serverName: "ecall-standin"),
            onServerRunning: { channel in bound.yield(channel.localAddress?.port ?? port); bound.finish() },
            logger: Self.quiet(log))
        let task = Task {
            // If the server ends before it runs (port taken), `start` must not wait forever.
            defer { bound.finish() }
            try await app.run()
        }
        server.withLock { $0 = task }
        for await p in ports { return "http://127.0.0.1:\(p)/app/api" }
        if case .failure(let error) = await task.result { throw error }
        throw CancellationError()
    }

    /// Hummingbird logs a cancelled server at error level; stopping the stand-in is not an error.
    static func quiet(_ log: Logger) -> Logger {
        var l = log
        l.logLevel = .critical
        return l
    }

    public func stop() async {
        let task = server.withLock { t in defer { t = nil }; return t }
        task?.cancel()
        _ = await task?.result
    }

    /// Makes every access token issued so far expire now (to test refreshing).
    public func expireAccessTokens() {
        state.withLock { s in for k in s.tokens.keys { s.tokens[k]?.expires = .distantPast } }
    }
}
