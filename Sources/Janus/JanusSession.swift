import Foundation
public import Logging
import TextWebSocket

/// One Janus session over one WebSocket: create, attach, message, trickle, keepalive,
/// detach, destroy. Replies are matched to requests by transaction and time out; events
/// are delivered per handle.
public actor JanusSession {
    public struct Options: Sendable {
        public var apiSecret: String?
        public var token: String?
        public var requestTimeout: Duration = .seconds(10)
        /// Well inside Janus's default 60 s session timeout.
        public var keepaliveInterval: Duration = .seconds(25)
        public init(apiSecret: String? = nil, token: String? = nil) {
            self.apiSecret = apiSecret
            self.token = token
        }
    }

    private enum Expect { case ack, result }
    private struct Pending {
        var expect: Expect
        var continuation: CheckedContinuation<JanusMessage, any Error>
    }
    private enum State { case open, closed }

    public let url: String
    private let options: Options
    private let logger: Logger
    private let socket: TextWebSocket
    private var state = State.open
    private var pending: [String: Pending] = [:]
    private var handles: [Int64: AsyncStream<HandleEvent>.Continuation] = [:]
    private var nextTransaction = 0
    private var keepalive: Task<Void, Never>?
    /// Messages this client could not use (malformed JSON, unknown verbs, unknown handles).
    public private(set) var ignoredMessages = 0
    /// The Janus session id.
    public private(set) var id: Int64 = 0

    /// Connects and creates a session.
    public static func connect(url: String, options: Options = .init(), logger: Logger) async throws(JanusError) -> JanusSession {
        let socket: TextWebSocket
        // Janus refuses connections without its subprotocol.
        do { socket = try await TextWebSocket.connect(url: url, subprotocol: "janus-protocol", logger: logger) } catch {
            throw .unreachable(url: url, reason: error.reason)
        }
        let session = JanusSession(url: url, socket: socket, options: options, logger: logger)
        await session.startReading()
        let reply: JanusMessage
        do { reply = try await session.request(JanusRequest("create", transaction: ""), expect: .result) } catch {
            await session.close()
            throw error
        }
        guard let id = reply.data?["id"]?.int else {
            await session.close()
            throw .protocolViolation("create without session id")
        }
        await session.started(id: id)
        return session
    }

    private init(url: String, socket: TextWebSocket, options: Options, logger: Logger) {
        self.url = url
        self.socket = socket
        self.options = options
        self.logger = logger
    }

    private func startReading() {
        Task { [socket] in
            for await text in socket.incoming { self.dispatch(text) }
            self.connectionLost()
        }
    }

    private func started(id: Int64) {
        self.id = id
        var log = logger
        log[metadataKey: "janus.session"] = "\(id)"
        logger.debug("janus session created", metadata: ["janus.session": "\(id)"])
        let interval = options.keepaliveInterval
        keepalive = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                guard !Task.isCancelled else { return }
                do { _ = try await self.request(JanusRequest("keepalive", transaction: "", sessionID: self.id), expect: .ack) } catch {
                    log.warning("keepalive failed: \(error)")
                }
            }
        }
    }

    /// Attaches to a plugin (e.g. `janus.plugin.videoroom`); the handle's events start now.
    public func attach(plugin: String) async throws(JanusError) -> JanusHandle {
        var r = JanusRequest("attach", transaction: "", sessionID: id)
        r.plugin = plugin
        let reply = try await request(r, expect: .result)
        guard let hid = reply.data?["id"]?.int else { throw .protocolViolation("attach without handle id") }
        let (events, continuation) = AsyncStream.makeStream(of: HandleEvent.self)
        handles[hid] = continuation
        return JanusHandle(id: hid, session: self, events: events)
    }

    /// Sends a plugin message and waits for its result: the synchronous `success` or, after
    /// an `ack`, the `event` with the same transaction.
    func message(handle: Int64, body: JSON, jsep: JSEP?) async throws(JanusError) -> PluginReply {
        var r = JanusRequest("message", transaction: "", sessionID: id, handleID: handle)
        r.body = body
        r.jsep = jsep
        let reply = try await request(r, expect: .result)
        if let e = reply.pluginError { throw e }
        guard let data = reply.plugindata?.data else { throw .protocolViolation("reply without plugin data") }
        return PluginReply(data: data, jsep: reply.jsep)
    }

    func trickle(handle: Int64, candidate: JSON) async throws(JanusError) {
        var r = JanusRequest("trickle", transaction: "", sessionID: id, handleID: handle)
        r.candidate = candidate
        _ = try await request(r, expect: .ack)
    }

    func detach(handle: Int64) async {
        _ = try? await request(JanusRequest("detach", transaction: "", sessionID: id, handleID: handle), expect: .result)
        handles.removeValue(forKey: handle)?.finish()
    }

    /// Destroys the session and closes the socket. Safe to call more than once.
    public func close() async {
        guard state == .open else { return }
        if id != 0 {
            _ = try? await request(JanusRequest("destroy", transaction: "", sessionID: id), expect: .result)
        }
        shutDown()
        socket.close()
        await socket.closed()
    }

    // MARK: - Requests and replies

    private func request(_ r: JanusRequest, expect: Expect) async throws(JanusError) -> JanusMessage {
        guard state == .open else { throw .disconnected }
        var r = r
        nextTransaction += 1
        let transaction = "t\(nextTransaction)"
        r.transaction = transaction
        r.apisecret = options.apiSecret
        r.token = options.token
        let text: String
        do { text = String(decoding: try JSONEncoder().encode(r), as: UTF8.self) } catch { throw .protocolViolation("cannot encode \(r.janus)") }
        let timeout = options.requestTimeout
        let verb = r.janus
        let timer = Task {
            try? await Task.sleep(for: timeout)
            if !Task.isCancelled { self.fail(transaction, with: .timeout(request: verb)) }
        }
        defer { timer.cancel() }
        do {
            return try await withCheckedThrowingContinuation { c in
                pending[transaction] = Pending(expect: expect, continuation: c)
                socket.send(text)
            }
        } catch let e as JanusError {
            throw e
        } catch {
            throw .protocolViolation(String(describing: error))
        }
    }

    private func fail(_ transaction: String, with error: JanusError) {
        pending.removeValue(forKey: transaction)?.continuation.resume(throwing: error)
    }

    private func dispatch(_ text: String) {
        // Inbound only, at trace: it holds SDP but never our apisecret or token.
        logger.trace("janus ←", metadata: ["janus.json": "\(text)"])
        let message: JanusMessage
        do { message = try JSONDecoder().decode(JanusMessage.self, from: Data(text.utf8)) } catch {
            ignoredMessages += 1
            logger.warning("ignoring malformed message from Janus (\(text.utf8.count) bytes)")
            return
        }
        if let t = message.transaction, let p = pending[t] {
            switch message.janus {
            case "ack" where p.expect == .result:
                return  // an asynchronous plugin request: its event follows
            case "error":
                pending.removeValue(forKey: t)
                p.continuation.resume(throwing: JanusError.janus(code: message.error?.code ?? 0, reason: message.error?.reason ?? "unknown"))
                return
            case "ack", "success", "event":
                pending.removeValue(forKey: t)
                p.continuation.resume(returning: message)
                return
            default:
                break  // e.g. a trickle or webrtcup that carries the transaction: an event
            }
        }
        guard let event = Self.handleEvent(from: message) else {
            if message.janus == "timeout" {
                logger.error("Janus timed the session out")
                shutDown()
            } else if message.janus != "ack" {
                ignoredMessages += 1
                logger.debug("ignoring Janus message '\(message.janus)'")
            }
            return
        }
        guard let sender = message.sender, let c = handles[sender] else {
            ignoredMessages += 1
            logger.debug("Janus '\(message.janus)' for an unknown handle")
            return
        }
        c.yield(event)
        if case .detached = event { handles.removeValue(forKey: sender)?.finish() }
    }

    static func handleEvent(from m: JanusMessage) -> HandleEvent? {
        switch m.janus {
        case "event":
            guard let d = m.plugindata?.data else { return nil }
            return .plugin(data: d, jsep: m.jsep)
        case "trickle":
            guard let c = m.candidate else { return nil }
            if c["completed"]?.bool == true { return .trickle(mline: 0, candidate: nil) }
            guard let text = c["candidate"]?.string else { return nil }
            return .trickle(mline: Int(c["sdpMLineIndex"]?.int ?? 0), candidate: text)
        case "webrtcup": return .webrtcUp
        case "media": return .media(type: m.type ?? "?", receiving: m.receiving ?? false)
        case "hangup": return .hangup(reason: m.reason ?? "")
        case "slowlink": return .slowLink
        case "detached": return .detached
        default: return nil
        }
    }

    private func connectionLost() {
        if state == .open { logger.warning("connection to Janus lost") }
        shutDown()
    }

    private func shutDown() {
        state = .closed
        keepalive?.cancel()
        for (_, p) in pending { p.continuation.resume(throwing: JanusError.disconnected) }
        pending.removeAll()
        for (_, c) in handles { c.finish() }
        handles.removeAll()
    }
}

/// A plugin handle on a session.
public struct JanusHandle: Sendable {
    public let id: Int64
    public let session: JanusSession
    /// Events Janus pushes for this handle; ends when the handle is detached or the session closes.
    public let events: AsyncStream<HandleEvent>

    public func message(_ body: JSON, jsep: JSEP? = nil) async throws(JanusError) -> PluginReply {
        try await session.message(handle: id, body: body, jsep: jsep)
    }

    /// Trickles one local candidate.
    public func trickle(mline: Int, candidate: String) async throws(JanusError) {
        try await session.trickle(handle: id, candidate: ["candidate": .string(candidate), "sdpMLineIndex": .int(Int64(mline))])
    }

    /// Tells Janus no more local candidates will come.
    public func trickleCompleted() async throws(JanusError) {
        try await session.trickle(handle: id, candidate: ["completed": true])
    }

    public func detach() async { await session.detach(handle: id) }
}
