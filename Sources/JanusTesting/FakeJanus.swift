import Foundation
public import Janus
import Synchronization
import Locking

/// A Janus for tests, with no network: a `JanusTransport` whose far end the test drives.
///
/// Open a session over it with `JanusSession.open(over: fake, url: "fake", logger: log)`. Each
/// request the session sends is either answered by the fake itself (the verbs in `autoReply`)
/// or queued for the test: `try await fake.nextRequest()` takes the next one, and
/// `fake.reply(to:_:)` answers it whenever the test wants, so a test can hold a reply back
/// while it pushes events (`push(_:to:)`), times the session out or drops the connection.
public final class FakeJanus: JanusTransport {
    /// One request as the session sent it.
    public struct Request: Sendable {
        /// The Janus verb: create, attach, message, trickle, keepalive, detach, destroy.
        public let janus: String
        public let transaction: String
        public let sessionID: Int64?
        public let handleID: Int64?
        /// For `attach`: the plugin.
        public let plugin: String?
        /// For `message`: the plugin request (`body["request"]` is e.g. "join", "subscribe").
        public let body: JSON?
        public let jsep: JSEP?
        /// For `trickle`.
        public let candidate: JSON?
        /// The whole request as sent (apisecret and token included).
        public let json: JSON

        /// The plugin request named in the body (`join`, `configure`, `subscribe`, ...).
        public var request: String? { body?["request"]?.string }
    }

    /// Requests the fake answers itself, so that a test scripts only the interesting ones.
    public struct AutoReplies: OptionSet, Sendable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// `success` with `sessionID`.
        public static let create = Self(rawValue: 1 << 0)
        /// `success` with a new handle id (see `attachedHandles`).
        public static let attach = Self(rawValue: 1 << 1)
        public static let keepalive = Self(rawValue: 1 << 2)
        public static let trickle = Self(rawValue: 1 << 3)
        public static let detach = Self(rawValue: 1 << 4)
        public static let destroy = Self(rawValue: 1 << 5)
        /// Everything but plugin messages.
        public static let lifecycle: Self = [.create, .attach, .keepalive, .trickle, .detach, .destroy]
    }

    /// How to answer one request.
    public enum Reply: Sendable {
        /// Core success, e.g. `["id": 7]` for create or attach; no data for detach or destroy.
        case success(data: JSON? = nil)
        case ack
        /// A plugin's synchronous answer (`success` with plugindata).
        case pluginSuccess(data: JSON, jsep: JSEP? = nil)
        /// A plugin's asynchronous answer (`event` with the request's transaction); send `.ack` first
        /// if the test wants Janus's exact sequence (the session accepts either).
        case event(data: JSON, jsep: JSEP? = nil)
        /// A Janus core error (e.g. 403, 458).
        case error(code: Int, reason: String)
        /// A plugin error (e.g. VideoRoom 426 no such room), as an `event`.
        case pluginError(code: Int, reason: String)
    }

    /// What Janus pushes about a handle outside any request.
    public enum Event: Sendable {
        case plugin(data: JSON, jsep: JSEP? = nil)
        /// VideoRoom: publishers appeared (build each with `FakeJanus.publisher(id:display:streams:)`).
        case publishers(room: Int64, [JSON])
        case unpublished(room: Int64, feed: Int64)
        case leaving(room: Int64, feed: Int64)
        case trickle(mline: Int, candidate: String)
        case trickleCompleted
        case webrtcUp
        case media(type: String, receiving: Bool)
        case hangup(reason: String)
        case slowLink
        case detached
    }

    public let incoming: AsyncStream<String>
    /// The session id `create` is answered with when auto-replied.
    public let sessionID: Int64
    private let inbound: AsyncStream<String>.Continuation
    private let state: Locked<FarEnd>

    /// - Parameter autoReply: the verbs the fake answers itself (default: none).
    public init(autoReply: AutoReplies = [], sessionID: Int64 = 1001) {
        (incoming, inbound) = AsyncStream.makeStream(of: String.self)
        self.sessionID = sessionID
        state = Locked(FarEnd(auto: autoReply))
    }

    /// Which verbs are answered by the fake; change it between steps (e.g. remove `.attach` to
    /// hold the next attach reply back).
    public var autoReply: AutoReplies {
        get { state.withLock { $0.auto } }
        set { state.withLock { $0.auto = newValue } }
    }

    /// Every request the session sent, answered automatically or not, in order (what it sends
    /// after the transport closed is dropped, as a closed WebSocket drops it).
    public var received: [Request] { state.withLock { $0.received } }
    /// Handle ids given out by `acceptAttach` or the auto-reply, in order.
    public var attachedHandles: [Int64] { state.withLock { $0.handles.map(\.id) } }
    /// The session closed the transport, or `drop()` was called.
    public var isClosed: Bool { state.withLock { $0.closed } }

    // MARK: - The test's side

    /// How long a test waits for the session's next request by default: long, because a pool
    /// starved by parallel suites (under TSan, on 2 cores) can take seconds to run the step that
    /// sends it; a test that fails still fails, only later.
    public static let requestWait: Duration = .seconds(20)

    /// The next request not answered automatically, waiting up to `timeout` for it. Throws
    /// when none came in time, or when the transport closed with none left.
    public func nextRequest(timeout: Duration = FakeJanus.requestWait) async throws(FakeJanusError) -> Request {
        let id = state.withLock { s in s.nextWaiter += 1; return s.nextWaiter }
        let timer = Task {
            try? await Task.sleep(for: timeout)
            if !Task.isCancelled { self.abandon(id, .noRequest(within: timeout)) }
        }
        defer { timer.cancel() }
        do {
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (c: CheckedContinuation<Request, any Error>) in
                    switch state.withLock({ $0.wait(id, c) }) {
                    case .some(.success(let r)): c.resume(returning: r)
                    case .some(.failure(let e)): c.resume(throwing: e)
                    case nil: break
                    }
                }
            } onCancel: {
                abandon(id, .cancelled)
            }
        } catch let e as FakeJanusError { throw e } catch { throw .cancelled }
    }

    private func abandon(_ waiter: Int, _ error: FakeJanusError) {
        state.withLock { $0.abandon(waiter, error) }?.resume(throwing: error)
    }

    /// `nextRequest()`, failing unless it is a `verb` request (e.g. "attach", "message").
    public func nextRequest(_ verb: String, timeout: Duration = FakeJanus.requestWait) async throws(FakeJanusError) -> Request {
        let r = try await nextRequest(timeout: timeout)
        guard r.janus == verb else { throw .unexpected(expected: verb, got: r.janus) }
        return r
    }

    /// Answers `request`.
    public func reply(to request: Request, _ reply: Reply) {
        var m: [String: JSON] = ["transaction": .string(request.transaction)]
        if let s = request.sessionID { m["session_id"] = .int(s) }
        if let h = request.handleID { m["sender"] = .int(h) }
        switch reply {
        case .success(let data):
            m["janus"] = "success"
            if let data { m["data"] = data }
        case .ack:
            m["janus"] = "ack"
        case .pluginSuccess(let data, let jsep), .event(let data, let jsep):
            if case .event = reply { m["janus"] = "event" } else { m["janus"] = "success" }
            m["plugindata"] = pluginData(handle: request.handleID, data)
            if let jsep { m["jsep"] = ["type": .string(jsep.type), "sdp": .string(jsep.sdp)] }
        case .error(let code, let reason):
            m["janus"] = "error"
            m["error"] = ["code": .int(Int64(code)), "reason": .string(reason)]
        case .pluginError(let code, let reason):
            m["janus"] = "event"
            m["plugindata"] = pluginData(handle: request.handleID, ["videoroom": "event", "error_code": .int(Int64(code)), "error": .string(reason)])
        }
        send(raw: .object(m))
    }

    /// Answers an `attach` with a new handle id, which it returns.
    @discardableResult
    public func acceptAttach(_ request: Request) -> Int64 {
        let id = state.withLock { $0.newHandle(plugin: request.plugin) }
        reply(to: request, .success(data: ["id": .int(id)]))
        return id
    }

    /// Pushes an event about `handle`, as Janus does when something happens in the room.
    public func push(_ event: Event, to handle: Int64) {
        var m: [String: JSON] = ["session_id": .int(sessionID), "sender": .int(handle)]
        switch event {
        case .plugin(let data, let jsep):
            m["janus"] = "event"
            m["plugindata"] = pluginData(handle: handle, data)
            if let jsep { m["jsep"] = ["type": .string(jsep.type), "sdp": .string(jsep.sdp)] }
        case .publishers(let room, let list):
            return push(.plugin(data: ["videoroom": "event", "room": .int(room), "publishers": .array(list)]), to: handle)
        case .unpublished(let room, let feed):
            return push(.plugin(data: ["videoroom": "event", "room": .int(room), "unpublished": .int(feed)]), to: handle)
        case .leaving(let room, let feed):
            return push(.plugin(data: ["videoroom": "event", "room": .int(room), "leaving": .int(feed)]), to: handle)
        case .trickle(let mline, let candidate):
            m["janus"] = "trickle"
            m["candidate"] = ["sdpMLineIndex": .int(Int64(mline)), "candidate": .string(candidate)]
        case .trickleCompleted:
            m["janus"] = "trickle"
            m["candidate"] = ["completed": true]
        case .webrtcUp: m["janus"] = "webrtcup"
        case .media(let type, let receiving):
            m["janus"] = "media"
            m["type"] = .string(type)
            m["receiving"] = .bool(receiving)
        case .hangup(let reason):
            m["janus"] = "hangup"
            m["reason"] = .string(reason)
        case .slowLink: m["janus"] = "slowlink"
        case .detached: m["janus"] = "detached"
        }
        send(raw: .object(m))
    }

    /// Janus's session `timeout` (no keepalive for too long).
    public func pushTimeout() {
        send(raw: ["janus": "timeout", "session_id": .int(sessionID)])
    }

    /// Sends any message as Janus.
    public func send(raw message: JSON) {
        send(raw: String(decoding: (try? JSONEncoder().encode(message)) ?? Data(), as: UTF8.self))
    }

    /// Sends any text as Janus (also malformed text).
    public func send(raw text: String) { inbound.yield(text) }

    /// The connection is lost: the session sees its incoming messages end.
    public func drop() { finish() }

    /// A VideoRoom publisher as `publishers` events list it.
    public static func publisher(id: Int64, display: String, streams: [(type: String, mid: String, codec: String)] = [("audio", "audio0", "opus")]) -> JSON {
        .object([
            "id": .int(id), "display": .string(display),
            "streams": .array(streams.enumerated().map { i, s in
                ["type": .string(s.type), "mindex": .int(Int64(i)), "mid": .string(s.mid), "codec": .string(s.codec)]
            }),
        ])
    }

    private func pluginData(handle: Int64?, _ data: JSON) -> JSON {
        let plugin = state.withLock { s in s.handles.first { $0.id == handle }?.plugin } ?? "janus.plugin.videoroom"
        return ["plugin": .string(plugin), "data": data]
    }

    // MARK: - JanusTransport (the session's side)

    public func send(_ text: String) {
        let request = Request(decoding: text)
        let auto: Reply? = state.withLock { s in
            guard !s.closed else { return nil }
            s.received.append(request)
            guard let reply = s.autoReply(to: request, sessionID: sessionID) else {
                s.enqueue(request)?.resume(returning: request)
                return nil
            }
            return reply
        }
        if let auto { reply(to: request, auto) }
    }

    public func close() { finish() }

    public func closed() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            if state.withLock({ $0.waitForClose(c) }) { c.resume() }
        }
    }

    /// Waits until the transport closed, at most `timeout`; false if it is still open (so a
    /// test of a session that wrongly keeps it open fails instead of hanging).
    public func waitUntilClosed(timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while !isClosed, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(5)) }
        return isClosed
    }

    private func finish() {
        let (waiters, closers) = state.withLock { $0.close() }
        inbound.finish()
        for w in waiters { w.resume(throwing: FakeJanusError.closed) }
        for c in closers { c.resume() }
    }
}
