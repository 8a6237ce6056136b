public import Foundation
public import Logging
public import Comeback
import TextWebSocket

/// One Janus session over one transport (a WebSocket): create, attach, message, trickle,
/// keepalive, detach, destroy. Replies are matched to requests by transaction and time out;
/// events are delivered per handle.
///
/// The session's lifecycle is `State`. Every method checks it again after each `await`,
/// because `close()`, a lost connection or Janus's `timeout` may have run meanwhile.
public actor JanusSession {
    public struct Options: Sendable {
        public var apiSecret: String?
        public var token: String?
        /// Every request, `create` and `attach` included.
        public var requestTimeout: Duration = .seconds(10)
        /// TCP connect plus WebSocket upgrade: a port that accepts and never answers fails after this.
        public var connectTimeout: Duration = .seconds(10)
        /// Well inside Janus's default 60 s session timeout.
        public var keepaliveInterval: Duration = .seconds(25)
        /// After the connection drops: how long to keep reconnecting and `claim`ing the session
        /// (zero: the session ends with the connection). Janus keeps a session whose WebSocket
        /// closed for its `reclaim_session_timeout` (default 0: not at all); a claim it refuses
        /// ends the session at once, whatever is left of this window.
        public var reclaimWindow: Duration = .zero
        /// Waits between reconnection attempts.
        public var backoff = Backoff()
        /// What keepalives and reconnection waits sleep on (a test gives a manual one).
        public var clock: any Clock<Duration> = ContinuousClock()
        public init(apiSecret: String? = nil, token: String? = nil) {
            self.apiSecret = apiSecret
            self.token = token
        }
    }

    enum State {
        /// The transport is open and `create` is in flight.
        case connecting
        /// Janus created session `id`: requests and new handles are accepted.
        case open(id: Int64)
        /// The connection dropped: reconnecting to `claim` session `id`. Handles keep their
        /// events; new requests wait for the claim (within their timeout).
        case reconnecting(id: Int64)
        /// `close()` is destroying the session: no new requests or handles; the events of
        /// existing handles still arrive until it is closed.
        case closing(id: Int64)
        /// Pending requests failed, handle streams finished, the transport is closing.
        case closed(CloseReason)
    }
    enum CloseReason { case closedByUs, connectionLost, timedOutByJanus, notReclaimed }
    /// Opens a new connection to the same Janus, for reconnecting.
    public typealias Connector = @Sendable () async throws(JanusError) -> any JanusTransport
    enum Expect { case ack, result }
    struct Pending {
        var expect: Expect
        /// The handle the request was about: a reply from another `sender` is not its answer.
        var handle: Int64?
        var continuation: CheckedContinuation<JanusMessage, any Error>
    }

    public let url: String
    let options: Options
    var logger: Logger
    var transport: any JanusTransport
    /// Bumped with every new transport: the reader of an old one must not act on its end.
    var generation = 0
    let connector: Connector?
    var reconnecting: Task<Void, Never>?
    /// Requests waiting for a reconnection to finish.
    var reopenWaiters: [Int: CheckedContinuation<Void, any Error>] = [:]
    var state = State.connecting
    var pending: [String: Pending] = [:]
    var handles: [Int64: AsyncStream<HandleEvent>.Continuation] = [:]
    var nextTransaction = 0
    var keepalive: Task<Void, Never>?
    /// Messages this client could not use (malformed JSON, unknown verbs, unknown handles,
    /// another session's id, numbers out of range, messages over `maxMessageBytes`).
    public internal(set) var ignoredMessages = 0
    /// Connections that dropped under an open session, and how many of them ended in a
    /// successful `claim` (the session, its handles and PeerConnections kept).
    public internal(set) var connectionDrops = 0
    public internal(set) var reclaims = 0
    /// When the connection last dropped under an open session (the start of an outage that a
    /// refused claim turns into a lost session).
    public internal(set) var lastConnectionDrop: Date?
    /// The largest message decoded. Janus's messages, SDP included, stay far below 1 MiB;
    /// the WebSocket transport closes the connection above the same size.
    public static let maxMessageBytes = TextWebSocket.Limits().maxMessageBytes
    /// The Janus session id; 0 before Janus created it and after the session closed.
    public var id: Int64 {
        switch state {
        case .open(let id), .reconnecting(let id), .closing(let id): id
        case .connecting, .closed: 0
        }
    }

    /// Whether requests go out now (not while reconnecting, closing or closed).
    public var isOpen: Bool {
        if case .open = state { true } else { false }
    }

    /// Connects a WebSocket to `url` and creates a session.
    /// `socketOpened` is called between the WebSocket opening and the session's `create` (the
    /// load test times both).
    public static func connect(url: String, options: Options = .init(), logger: Logger,
                               socketOpened: @Sendable () -> Void = {}) async throws(JanusError) -> JanusSession {
        let connector = webSocketConnector(url: url, options: options, logger: logger)
        let transport = try await connector()
        socketOpened()
        return try await open(over: transport, url: url, options: options, logger: logger, reconnect: connector)
    }

    /// A WebSocket to `url` with Janus's subprotocol (Janus refuses connections without it).
    static func webSocketConnector(url: String, options: Options, logger: Logger) -> Connector {
        var limits = TextWebSocket.Limits()
        limits.handshakeTimeout = options.connectTimeout
        var log = logger
        log[metadataKey: "component"] = "janus"
        return { [log, limits] () async throws(JanusError) -> any JanusTransport in
            do { return try await TextWebSocket.connect(url: url, subprotocol: "janus-protocol", limits: limits, logger: log) } catch let e as TextWebSocket.Unreachable {
                throw .unreachable(url: url, reason: e.reason)
            } catch {
                throw .unreachable(url: url, reason: "\(error)")
            }
        }
    }

    /// Creates a session (`create`) over a transport that is already connected to `url`;
    /// on failure the transport is closed. With `reconnect` and a `reclaimWindow`, a dropped
    /// connection is replaced by one from `reconnect` and the session claimed over it.
    public static func open(over transport: some JanusTransport, url: String, options: Options = .init(), logger: Logger,
                            reconnect: Connector? = nil) async throws(JanusError) -> JanusSession {
        let session = JanusSession(url: url, transport: transport, options: options, logger: logger, connector: reconnect)
        await session.startReading()
        try await session.create()
        return session
    }

    private init(url: String, transport: any JanusTransport, options: Options, logger: Logger, connector: Connector?) {
        self.url = url
        self.transport = transport
        self.connector = connector
        self.options = options
        var log = logger
        log[metadataKey: "component"] = "janus"
        self.logger = log
    }

    func startReading() {
        let generation = self.generation
        Task { [transport] in
            for await text in transport.incoming { self.dispatch(text) }
            self.connectionLost(generation: generation)
        }
    }

    private func create() async throws(JanusError) {
        let reply: JanusMessage
        do { reply = try await request(JanusRequest("create", transaction: ""), expect: .result) } catch {
            await close()
            throw error
        }
        guard case .connecting = state else {
            // The connection was lost (or the session closed) while the reply was on its way.
            await close()
            throw .disconnected
        }
        guard let id = reply.data?["id"]?.int else {
            await close()
            throw .protocolViolation("create without session id")
        }
        state = .open(id: id)
        logger[metadataKey: "janus.session"] = "\(id)"
        logger.debug("janus session created")
        let interval = options.keepaliveInterval
        keepalive = Task { await self.keepAlive(every: interval) }
    }

    private func keepAlive(every interval: Duration) async {
        while !Task.isCancelled {
            try? await options.clock.sleep(for: interval)
            guard !Task.isCancelled else { return }
            switch state {
            case .open(let id):
                do { _ = try await request(JanusRequest("keepalive", transaction: "", sessionID: id), expect: .ack) } catch {
                    // A session that is closing or closed needs no keepalive; only an open one warns.
                    guard case .open = state else { continue }
                    logger.warning("keepalive failed: \(error)")
                }
            case .reconnecting:
                continue  // the claim refreshes the session; keepalives resume after it
            case .connecting, .closing, .closed:
                return
            }
        }
    }

    /// Attaches to a plugin (e.g. `janus.plugin.videoroom`); the handle's events start now.
    public func attach(plugin: String) async throws(JanusError) -> JanusHandle {
        try await waitIfReconnecting()
        guard case .open(let id) = state else { throw .disconnected }
        var r = JanusRequest("attach", transaction: "", sessionID: id)
        r.plugin = plugin
        let reply = try await request(r, expect: .result)
        // close() may have begun while the reply was on its way: a handle registered now would
        // have an event stream nobody finishes. Janus drops the handle with the session.
        guard case .open = state else { throw .disconnected }
        guard let hid = reply.data?["id"]?.int else { throw .protocolViolation("attach without handle id") }
        let (events, continuation) = AsyncStream.makeStream(of: HandleEvent.self)
        handles[hid] = continuation
        logger.debug("janus handle attached", metadata: ["janus.handle": "\(hid)", "janus.plugin": "\(plugin)"])
        return JanusHandle(id: hid, session: self, events: events)
    }

    /// Sends a plugin message and waits for its result: the synchronous `success` or, after
    /// an `ack`, the `event` with the same transaction.
    func message(handle: Int64, body: JSON, jsep: JSEP?) async throws(JanusError) -> PluginReply {
        try await waitIfReconnecting()
        guard case .open(let id) = state else { throw .disconnected }
        var r = JanusRequest("message", transaction: "", sessionID: id, handleID: handle)
        r.body = body
        r.jsep = jsep
        // No session state changes after the reply: a result that arrived is the caller's,
        // even if the session closes now (its next request fails).
        let reply = try await request(r, expect: .result)
        if let e = reply.pluginError { throw e }
        guard let data = reply.plugindata?.data else { throw .protocolViolation("reply without plugin data") }
        return PluginReply(data: data, jsep: reply.jsep)
    }

    func trickle(handle: Int64, candidate: JSON) async throws(JanusError) {
        try await waitIfReconnecting()
        guard case .open(let id) = state else { throw .disconnected }
        var r = JanusRequest("trickle", transaction: "", sessionID: id, handleID: handle)
        r.candidate = candidate
        _ = try await request(r, expect: .ack)
    }

    func detach(handle: Int64) async {
        if case .open(let id) = state {
            _ = try? await request(JanusRequest("detach", transaction: "", sessionID: id, handleID: handle), expect: .result)
        }
        // Whatever happened meanwhile, this handle's events end here (finishing twice is harmless).
        handles.removeValue(forKey: handle)?.finish()
    }

    /// Destroys the session and closes the transport. Safe to call more than once and from
    /// several tasks: every call returns once the transport has closed.
    public func close() async {
        switch state {
        case .connecting, .reconnecting:
            // No connection to destroy the session over: Janus drops it after its reclaim timeout.
            shutDown(.closedByUs)
        case .open(let id):
            // From here on no request but `destroy` is sent and no handle is added.
            state = .closing(id: id)
            keepalive?.cancel()
            _ = try? await request(JanusRequest("destroy", transaction: "", sessionID: id), expect: .result)
            // The connection may have been lost while destroying: shutDown keeps the first reason.
            shutDown(.closedByUs)
        case .closing, .closed:
            break  // another close() (or a lost connection) is finishing; wait for the transport
        }
        await transport.closed()
    }

    /// Handles whose event streams are still open (for tests).
    var openHandleCount: Int { handles.count }
}
