public import Foundation
public import Logging
import TextWebSocket

/// STOMP 1.2 over WebSocket (subprotocol `v12.stomp`), as ECall talks to RabbitMQ's Web-STOMP
/// (ECALL-WIRE §7): CONNECT with the device's login and token, heart-beats both ways,
/// SUBSCRIBE/SEND, ERROR frames, and reconnection (with fresh credentials, also shortly before
/// they expire) that subscribes again. Malformed frames are counted and skipped.
public actor StompClient {
    public struct Options: Sendable {
        public var url: String
        /// The virtual host (`host` header): ECall's is `ecall`.
        public var host: String
        /// Heart-beats we send, and want from the server.
        public var heartBeat: Duration = .seconds(10)
        public var connectTimeout: Duration = .seconds(10)
        /// Reconnect this long before the credentials expire.
        public var renewBefore: Duration = .seconds(60)
        public init(url: String, host: String) {
            self.url = url
            self.host = host
        }
    }

    /// What to log in with: fetched anew for every (re)connection.
    public struct Credentials: Sendable {
        public var login: String
        public var passcode: String
        public var expires: Date?
        public init(login: String, passcode: String, expires: Date? = nil) {
            self.login = login
            self.passcode = passcode
            self.expires = expires
        }
    }

    public struct Counters: Sendable, Equatable {
        public var connections = 0
        public var heartBeatsReceived = 0
        public var malformedFrames = 0
        public var errorFrames = 0
        public var messages = 0
    }

    /// The connection's lifecycle. Every method checks it again after each `await`, so one
    /// connection is made at a time and `close()` wins over a connect in flight.
    enum State {
        /// Not started, or the first connect failed.
        case idle
        /// A connect is in flight (the first one, or the reconnect loop's).
        case connecting(Attempt)
        case connected(Connection)
        /// The connection dropped; the reconnect loop waits before the next attempt.
        case reconnecting
        case closed
    }

    /// One connect in flight: its task (a second `start()` awaits it), and the socket and the
    /// CONNECTED waiter once they exist.
    final class Attempt {
        let id: Int
        /// The first connect (by `start`): on failure the client is idle again, not reconnecting.
        let first: Bool
        var task: Task<Result<Void, StompError>, Never>?
        var socket: (any StompTransport)?
        var reader: Task<Void, Never>?
        /// What came before the waiter (CONNECTED, ERROR, loss, close): kept for it.
        var early: Result<StompFrame, StompError>?
        var waiter: CheckedContinuation<StompFrame, any Error>?
        init(id: Int, first: Bool) {
            self.id = id
            self.first = first
        }

        func resume(_ result: Result<StompFrame, StompError>) {
            guard let w = waiter else {
                if early == nil { early = result }
                return
            }
            waiter = nil
            w.resume(with: result.mapError { $0 as any Error })
        }
    }

    /// A live connection: its socket and the tasks that read, beat and renew on it.
    struct Connection {
        let socket: any StompTransport
        var tasks: [Task<Void, Never>]
        /// We are ending it to renew the credentials (reconnect at once).
        var renewing = false
        func cancel() { for t in tasks { t.cancel() } }
    }

    public let options: Options
    let credentials: @Sendable () async throws -> Credentials
    let connect: Connector
    let log: Logger
    var state = State.idle
    var parser = StompParser()
    var subscriptions: [String: (destination: String, sink: AsyncStream<StompFrame>.Continuation)] = [:]
    var nextID = 0
    var nextAttempt = 0
    var lastHeard = ContinuousClock.now
    /// The reconnect loop, from the first successful `start()` until `close()`.
    var keeper: Task<Void, Never>?
    /// Yields when a connection ends: true if we ended it to renew the credentials.
    let lostSignal = AsyncStream.makeStream(of: Bool.self)
    public internal(set) var counters = Counters()
    /// Yields each time a connection is up (after CONNECTED and the subscriptions).
    public nonisolated let connections: AsyncStream<Int>
    let connectionsSink: AsyncStream<Int>.Continuation

    /// Opens the socket to `url` (subprotocol `v12.stomp`); throws if it cannot.
    public typealias Connector = @Sendable (_ url: String) async throws -> any StompTransport

    /// `connect` opens each connection's socket: a `TextWebSocket` unless a test gives a fake.
    public init(options: Options, logger: Logger, credentials: @escaping @Sendable () async throws -> Credentials,
                connect: Connector? = nil) {
        self.options = options
        self.credentials = credentials
        var log = logger
        log[metadataKey: "component"] = "stomp"
        self.log = log
        self.connect = connect ?? { [log] url in try await TextWebSocket.connect(url: url, subprotocol: "v12.stomp", logger: log) }
        (connections, connectionsSink) = AsyncStream.makeStream(of: Int.self)
    }

    /// Connects; afterwards the client stays connected (reconnecting after a drop) until `close`.
    /// A `start()` while another connects waits for that connection; once started it returns at once.
    public func start() async throws(StompError) {
        let attempt: Attempt
        switch state {
        case .closed: throw .closed
        case .connected, .reconnecting: return
        case .connecting(let a) where keeper != nil || !a.first: return
        case .connecting(let a):
            log.debug("STOMP: start() joins the connection in flight")
            attempt = a
        case .idle:
            attempt = begin(first: true)
        }
        let result = await attempt.task?.value ?? .failure(.closed)
        if case .closed = state { throw .closed }
        try result.get()
        if keeper == nil { keeper = Task { [weak self] in await self?.keepConnected() } }
    }

    /// MESSAGE frames arriving for `destination`; subscribed again after every reconnection.
    public func subscribe(_ destination: String) -> AsyncStream<StompFrame> {
        let (stream, sink) = AsyncStream.makeStream(of: StompFrame.self)
        if case .closed = state {
            sink.finish()
            return stream
        }
        nextID += 1
        let id = "sub-\(nextID)"
        subscriptions[id] = (destination, sink)
        // Not yet connected: the connection sends every subscription once it is up.
        if case .connected(let c) = state { c.socket.send(Self.subscribeFrame(id, destination)) }
        return stream
    }

    /// Sends a frame to `destination`. Fails (nothing is queued) while disconnected.
    public func send(_ destination: String, body: Data, headers: [(String, String)] = []) throws(StompError) {
        switch state {
        case .connected(let c): c.socket.send(StompFrame("SEND", [("destination", destination)] + headers, body: body).encoded)
        case .closed: throw .closed
        default: throw .notConnected
        }
    }

    /// Sends DISCONNECT, closes, and ends every subscription stream. A connect in flight is
    /// abandoned (its socket closed) before this returns.
    public func close() async {
        let previous = state
        state = .closed
        keeper?.cancel()
        keeper = nil
        switch previous {
        case .closed: return
        case .idle, .reconnecting: break
        case .connecting(let a):
            a.resume(.failure(.closed))
            a.task?.cancel()
            _ = await a.task?.value
        case .connected(let c):
            c.cancel()
            c.socket.send(StompFrame("DISCONNECT").encoded)
            c.socket.close()
            await c.socket.closed()
        }
        for s in subscriptions.values { s.sink.finish() }
        subscriptions.removeAll()
        connectionsSink.finish()
        lostSignal.continuation.finish()
    }

    static func subscribeFrame(_ id: String, _ destination: String) -> String {
        StompFrame("SUBSCRIBE", [("id", id), ("destination", destination), ("ack", "auto")]).encoded
    }
}

/// The socket STOMP runs over: a `TextWebSocket` in use, a fake server in tests.
public protocol StompTransport: AnyObject, Sendable {
    /// Text from the server; finishes when the connection ends.
    var incoming: AsyncStream<String> { get }
    func send(_ text: String)
    /// Closes after what is queued.
    func close()
    /// Returns once the connection has ended.
    func closed() async
}

extension TextWebSocket: StompTransport {}
