import Foundation
import Janus
import Locking

/// Why a `FakeJanus` step failed, with what the test should look at.
public struct FakeJanusError: Error, Sendable, Equatable, CustomStringConvertible {
    private enum Kind: Sendable, Equatable {
        case noRequest(within: Duration)
        case closed
        case cancelled
        case unexpected(expected: String, got: String)
    }
    private let kind: Kind

    /// The session sent nothing the test had to answer within the time.
    public static func noRequest(within d: Duration) -> Self { .init(kind: .noRequest(within: d)) }
    /// The transport closed (the session closed it, or `drop()`) with no request left.
    public static let closed = Self(kind: .closed)
    public static let cancelled = Self(kind: .cancelled)
    public static func unexpected(expected: String, got: String) -> Self { .init(kind: .unexpected(expected: expected, got: got)) }

    public var description: String {
        switch kind {
        case .noRequest(let d): "the session sent no request within \(d): is the step that sends it running, or is the verb in autoReply?"
        case .closed: "the transport closed with no request left: the session closed it, or the test dropped it"
        case .cancelled: "waiting for a request was cancelled"
        case .unexpected(let expected, let got): "expected a '\(expected)' request, the session sent '\(got)'"
        }
    }
}

extension FakeJanus.Request {
    /// Decodes what the session sent; anything undecodable becomes a request with verb "".
    init(decoding text: String) {
        let json = (try? JSONDecoder().decode(JSON.self, from: Data(text.utf8))) ?? .null
        self.init(
            janus: json["janus"]?.string ?? "", transaction: json["transaction"]?.string ?? "",
            sessionID: json["session_id"]?.int, handleID: json["handle_id"]?.int,
            plugin: json["plugin"]?.string, body: json["body"],
            jsep: json["jsep"].flatMap { j in j["type"]?.string.flatMap { t in j["sdp"]?.string.map { JSEP(type: t, sdp: $0) } } },
            candidate: json["candidate"], json: json)
    }
}

/// The fake's far end, behind one Locked: requests waiting for the test, tests waiting for
/// requests, handles given out. Methods return the continuations to resume outside the lock.
struct FarEnd {
    typealias Waiter = CheckedContinuation<FakeJanus.Request, any Error>
    var auto: FakeJanus.AutoReplies
    var received: [FakeJanus.Request] = []
    var queue: [FakeJanus.Request] = []
    var waiters: [(id: Int, continuation: Waiter)] = []
    /// Waiters that timed out or were cancelled before they registered.
    var abandoned: [Int: FakeJanusError] = [:]
    var nextWaiter = 0
    var handles: [(id: Int64, plugin: String)] = []
    var closed = false
    var closeWaiters: [CheckedContinuation<Void, Never>] = []

    init(auto: FakeJanus.AutoReplies) { self.auto = auto }

    mutating func newHandle(plugin: String?) -> Int64 {
        let id = 2001 + Int64(handles.count)
        handles.append((id, plugin ?? "janus.plugin.videoroom"))
        return id
    }

    mutating func autoReply(to r: FakeJanus.Request, sessionID: Int64) -> FakeJanus.Reply? {
        switch r.janus {
        case "create" where auto.contains(.create): .success(data: ["id": .int(sessionID)])
        case "attach" where auto.contains(.attach): .success(data: ["id": .int(newHandle(plugin: r.plugin))])
        case "keepalive" where auto.contains(.keepalive), "trickle" where auto.contains(.trickle): .ack
        case "detach" where auto.contains(.detach), "destroy" where auto.contains(.destroy): .success()
        default: nil
        }
    }

    /// Hands `r` to the oldest waiting test, or queues it.
    mutating func enqueue(_ r: FakeJanus.Request) -> Waiter? {
        if waiters.isEmpty { queue.append(r); return nil }
        return waiters.removeFirst().continuation
    }

    /// What a new waiter gets at once, or nil if it must wait (then it is registered).
    mutating func wait(_ id: Int, _ c: Waiter) -> Result<FakeJanus.Request, FakeJanusError>? {
        if let e = abandoned.removeValue(forKey: id) { return .failure(e) }
        if !queue.isEmpty { return .success(queue.removeFirst()) }
        if closed { return .failure(.closed) }
        waiters.append((id, c))
        return nil
    }

    /// Removes waiter `id` (to fail it), or remembers that it must fail when it registers.
    mutating func abandon(_ id: Int, _ error: FakeJanusError) -> Waiter? {
        if let i = waiters.firstIndex(where: { $0.id == id }) { return waiters.remove(at: i).continuation }
        abandoned[id] = error
        return nil
    }

    mutating func waitForClose(_ c: CheckedContinuation<Void, Never>) -> Bool {
        if closed { return true }
        closeWaiters.append(c)
        return false
    }

    mutating func close() -> (waiters: [Waiter], closers: [CheckedContinuation<Void, Never>]) {
        guard !closed else { return ([], []) }
        closed = true
        defer { waiters.removeAll(); closeWaiters.removeAll() }
        return (waiters.map(\.continuation), closeWaiters)
    }
}
