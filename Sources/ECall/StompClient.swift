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

    public let options: Options
    private let credentials: @Sendable () async throws -> Credentials
    private let log: Logger
    private var socket: TextWebSocket?
    private var parser = StompParser()
    private var subscriptions: [String: (destination: String, sink: AsyncStream<StompFrame>.Continuation)] = [:]
    private var nextID = 0
    private var lastHeard = ContinuousClock.now
    private var connectedWaiter: CheckedContinuation<StompFrame, any Error>?
    private var tasks: [Task<Void, Never>] = []
    private var stopped = false
    /// Yields when a connection ends: true if we ended it to renew the credentials.
    private let lostSignal = AsyncStream.makeStream(of: Bool.self)
    private var renewing = false
    public private(set) var counters = Counters()
    /// Yields each time a connection is up (after CONNECTED and the subscriptions).
    public nonisolated let connections: AsyncStream<Int>
    private let connectionsSink: AsyncStream<Int>.Continuation

    public init(options: Options, logger: Logger, credentials: @escaping @Sendable () async throws -> Credentials) {
        self.options = options
        self.credentials = credentials
        log = logger
        (connections, connectionsSink) = AsyncStream.makeStream(of: Int.self)
    }

    /// Connects; afterwards the client stays connected (reconnecting after a drop) until `close`.
    public func start() async throws(StompError) {
        try await connectOnce()
        tasks.append(Task { [weak self] in await self?.keepConnected() })
    }

    /// MESSAGE frames arriving for `destination`; subscribed again after every reconnection.
    public func subscribe(_ destination: String) -> AsyncStream<StompFrame> {
        nextID += 1
        let id = "sub-\(nextID)"
        let (stream, sink) = AsyncStream.makeStream(of: StompFrame.self)
        subscriptions[id] = (destination, sink)
        socket?.send(StompFrame("SUBSCRIBE", [("id", id), ("destination", destination), ("ack", "auto")]).encoded)
        return stream
    }

    /// Sends a frame to `destination`. Fails (nothing is queued) while disconnected.
    public func send(_ destination: String, body: Data, headers: [(String, String)] = []) throws(StompError) {
        guard let socket else { throw .notConnected }
        socket.send(StompFrame("SEND", [("destination", destination)] + headers, body: body).encoded)
    }

    /// Sends DISCONNECT, closes, and ends every subscription stream.
    public func close() async {
        stopped = true
        for t in tasks { t.cancel() }
        if let socket {
            socket.send(StompFrame("DISCONNECT").encoded)
            socket.close()
            await socket.closed()
        }
        socket = nil
        for s in subscriptions.values { s.sink.finish() }
        subscriptions.removeAll()
        connectionsSink.finish()
        lostSignal.continuation.finish()
    }

    // MARK: - Connection

    private func connectOnce() async throws(StompError) {
        let c: Credentials
        do { c = try await credentials() } catch { throw .credentials(String(describing: error)) }
        let s: TextWebSocket
        do { s = try await TextWebSocket.connect(url: options.url, subprotocol: "v12.stomp", logger: log) } catch {
            throw .unreachable(error.description)
        }
        parser = StompParser()
        socket = s
        lastHeard = .now
        let reader = Task { [weak self] in
            for await text in s.incoming { await self?.received(text) }
            await self?.lost(s)
        }
        let ms = options.heartBeat.components.seconds * 1000 + options.heartBeat.components.attoseconds / 1_000_000_000_000_000
        s.send(StompFrame("CONNECT", [
            ("accept-version", "1.2"), ("host", options.host), ("login", c.login), ("passcode", c.passcode), ("heart-beat", "\(ms),\(ms)"),
        ]).encoded)
        let connected: StompFrame
        do {
            connected = try await withThrowingTaskGroup(of: StompFrame.self) { group in
                group.addTask { try await self.waitConnected() }
                group.addTask {
                    try await Task.sleep(for: self.options.connectTimeout)
                    throw StompError.unreachable("no CONNECTED within \(self.options.connectTimeout)")
                }
                defer { group.cancelAll() }
                return try await group.next()!
            }
        } catch {
            connectedWaiter = nil
            reader.cancel()
            s.close()
            socket = nil
            throw error as? StompError ?? .unreachable(String(describing: error))
        }
        counters.connections += 1
        tasks.append(reader)
        // heart-beat: server's "sx,sy"; we send every max(ours, sy), expect every max(sx, ours).
        let server = (connected["heart-beat"] ?? "0,0").split(separator: ",").compactMap { Int($0) }
        let sx = server.first ?? 0, sy = server.count > 1 ? server[1] : 0
        let sendEvery = sy == 0 ? 0 : max(Int(ms), sy), expectEvery = sx == 0 ? 0 : max(Int(ms), sx)
        tasks.append(Task { [weak self] in await self?.heartBeats(on: s, every: sendEvery, expect: expectEvery) })
        for (id, sub) in subscriptions.sorted(by: { $0.key < $1.key }) {
            s.send(StompFrame("SUBSCRIBE", [("id", id), ("destination", sub.destination), ("ack", "auto")]).encoded)
        }
        if let expires = c.expires {
            let renewAt = expires.addingTimeInterval(-Double(options.renewBefore.components.seconds))
            tasks.append(Task { [weak self] in
                try? await Task.sleep(for: .seconds(max(1, renewAt.timeIntervalSinceNow)))
                guard !Task.isCancelled else { return }
                await self?.renew(s)
            })
        }
        log.info("STOMP connected to \(options.url) (heart-beats: send \(sendEvery) ms, expect \(expectEvery) ms)")
        connectionsSink.yield(counters.connections)
    }

    private func waitConnected() async throws -> StompFrame {
        try await withCheckedThrowingContinuation { connectedWaiter = $0 }
    }

    private func renew(_ s: TextWebSocket) {
        guard socket === s else { return }
        renewing = true
        log.info("STOMP credentials expire soon: reconnecting with fresh ones")
        s.send(StompFrame("DISCONNECT").encoded)
        s.close()
    }

    private func heartBeats(on s: TextWebSocket, every sendMs: Int, expect expectMs: Int) async {
        let tick = max(200, min(sendMs == 0 ? 5000 : sendMs, expectMs == 0 ? 5000 : expectMs) / 2)
        var lastSent = ContinuousClock.now
        while !Task.isCancelled, socket === s {
            try? await Task.sleep(for: .milliseconds(tick))
            if sendMs > 0, ContinuousClock.now - lastSent >= .milliseconds(sendMs) {
                s.send("\n")
                lastSent = .now
            }
            // Nothing heard for twice the agreed interval: the connection is dead.
            if expectMs > 0, ContinuousClock.now - lastHeard > .milliseconds(2 * expectMs) {
                log.warning("STOMP: no heart-beat from the server for \(2 * expectMs) ms, reconnecting")
                s.close()
                return
            }
        }
    }

    private func received(_ text: String) {
        lastHeard = .now
        for event in parser.append(text.utf8) {
            switch event {
            case .heartBeat: counters.heartBeatsReceived += 1
            case .malformed(let m):
                counters.malformedFrames += 1
                log.warning("STOMP: dropped a \(m)")
            case .frame(let f): handle(f)
            }
        }
    }

    private func handle(_ f: StompFrame) {
        switch f.command {
        case "CONNECTED":
            connectedWaiter?.resume(returning: f)
            connectedWaiter = nil
        case "MESSAGE":
            counters.messages += 1
            guard let id = f["subscription"], let sub = subscriptions[id] else {
                log.warning("STOMP: a MESSAGE for no subscription of ours (\(f["subscription"] ?? "none")), dropped")
                return
            }
            sub.sink.yield(f)
        case "ERROR":
            counters.errorFrames += 1
            let message = f["message"] ?? String(decoding: f.body.prefix(200), as: UTF8.self)
            log.error("STOMP server error: \(message)")
            if let w = connectedWaiter {
                connectedWaiter = nil
                w.resume(throwing: StompError.refused(message))
            }
        case "RECEIPT":
            break
        default:
            counters.malformedFrames += 1
            log.warning("STOMP: unknown frame \(f.command.prefix(32)), dropped")
        }
    }

    private func lost(_ s: TextWebSocket) {
        guard socket === s else { return }
        socket = nil
        lostSignal.continuation.yield(renewing)
        renewing = false
        connectedWaiter?.resume(throwing: StompError.unreachable("the connection closed"))
        connectedWaiter = nil
    }

    /// After each drop: reconnect, at once after a renewal, else after 1 s doubling to 30 s,
    /// until it works or the client is closed.
    private func keepConnected() async {
        for await planned in lostSignal.stream {
            var delay = planned ? Duration.zero : .seconds(1)
            while !stopped, !Task.isCancelled, socket == nil {
                if delay > .zero {
                    log.info("STOMP: connection lost, reconnecting in \(delay)")
                    try? await Task.sleep(for: delay)
                }
                guard !stopped, !Task.isCancelled else { return }
                do {
                    try await connectOnce()
                } catch {
                    log.warning("STOMP: reconnect failed: \(error)")
                    delay = min(max(delay * 2, .seconds(1)), .seconds(30))
                }
            }
        }
    }
}

/// Why STOMP failed, in words that say what to do.
public enum StompError: Error, Equatable, CustomStringConvertible {
    case unreachable(String)
    /// The server sent ERROR to our CONNECT (bad login or token, unknown vhost).
    case refused(String)
    case credentials(String)
    case notConnected

    public var description: String {
        switch self {
        case .unreachable(let why): "STOMP server unreachable: \(why)"
        case .refused(let why): "STOMP server refused the connection: \(why) (check the device login and RabbitMQ token)"
        case .credentials(let why): "could not get STOMP credentials: \(why)"
        case .notConnected: "STOMP is not connected (reconnecting): the message was not sent"
        }
    }
}
