import ECall
import Foundation
import Logging
import Synchronization
import Locking

/// One fake STOMP socket and the server behind it: answers CONNECT with CONNECTED (no
/// heart-beats; 10 ms later as a network would, or at once) and records every frame the client sends.
final class FakeStompSocket: StompTransport {
    let incoming: AsyncStream<String>
    private let server: AsyncStream<String>.Continuation
    private struct State {
        var frames: [StompFrame] = []
        var ended = false
        var closedByClient = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }
    private let state = Locked(State())

    private let answerAtOnce: Bool

    init(answerAtOnce: Bool = false) {
        self.answerAtOnce = answerAtOnce
        (incoming, server) = AsyncStream.makeStream(of: String.self)
    }

    var frames: [StompFrame] { state.withLock { $0.frames } }
    var connects: Int { frames.filter { $0.command == "CONNECT" }.count }
    /// The client closed it (a drop by the server does not count).
    var closedByClient: Bool { state.withLock { $0.closedByClient } }
    /// Closed by either side.
    var ended: Bool { state.withLock { $0.ended } }

    func send(_ text: String) {
        var parser = StompParser()
        let frames = parser.append(text.utf8).compactMap { if case .frame(let f) = $0 { f } else { nil } }
        let open = state.withLock { s in
            guard !s.ended else { return false }
            s.frames += frames
            return true
        }
        guard open else { return }
        for f in frames where f.command == "CONNECT" {
            let answer = StompFrame("CONNECTED", [("version", "1.2"), ("heart-beat", "0,0")]).encoded
            if answerAtOnce { server.yield(answer); continue }
            Task { [server] in
                try? await Task.sleep(for: .milliseconds(10))
                server.yield(answer)
            }
        }
    }

    func close() {
        state.withLock { $0.closedByClient = true }
        end()
    }

    /// The server goes away: the client's reader sees the end.
    func drop() { end() }

    private func end() {
        let waiters = state.withLock { s in
            s.ended = true
            defer { s.waiters = [] }
            return s.waiters
        }
        server.finish()
        for w in waiters { w.resume() }
    }

    func closed() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s in
                if !s.ended { s.waiters.append(c) }
                return s.ended
            }
            if now { c.resume() }
        }
    }
}

/// Opens `FakeStompSocket`s for a `StompClient`; while held, each open waits for `release()`
/// (and notes whether its task was cancelled meanwhile).
final class FakeStompNetwork: Sendable {
    private struct State {
        var opens = 0
        var cancelledOpens = 0
        var held = false
        var waiting: [CheckedContinuation<Void, Never>] = []
        var sockets: [FakeStompSocket] = []
    }
    private let state = Locked(State())
    private let answerAtOnce: Bool

    init(answerAtOnce: Bool = false) { self.answerAtOnce = answerAtOnce }

    var opens: Int { state.withLock { $0.opens } }
    var cancelledOpens: Int { state.withLock { $0.cancelledOpens } }
    var sockets: [FakeStompSocket] { state.withLock { $0.sockets } }
    /// Sockets neither side has closed.
    var open: [FakeStompSocket] { sockets.filter { !$0.ended } }

    func hold() { state.withLock { $0.held = true } }

    func release() {
        let waiting = state.withLock { s in
            s.held = false
            defer { s.waiting = [] }
            return s.waiting
        }
        for w in waiting { w.resume() }
    }

    var connector: StompClient.Connector { { [self] _ in await self.connect() } }

    private func connect() async -> any StompTransport {
        state.withLock { $0.opens += 1 }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let go = state.withLock { s in
                    if s.held { s.waiting.append(c) }
                    return !s.held
                }
                if go { c.resume() }
            }
        } onCancel: {
            state.withLock { $0.cancelledOpens += 1 }
        }
        let socket = FakeStompSocket(answerAtOnce: answerAtOnce)
        state.withLock { $0.sockets.append(socket) }
        return socket
    }
}

/// Every message a logger wrote, so a test can wait for a step it cannot otherwise observe.
final class LogLines: Sendable {
    private let lines = Locked<[String]>([])

    func logger() -> Logger {
        var l = Logger(label: "test") { _ in Handler(sink: self) }
        l.logLevel = .trace
        return l
    }

    func contains(_ text: String) -> Bool { lines.withLock { $0.contains { $0.contains(text) } } }

    struct Handler: LogHandler {
        let sink: LogLines
        var logLevel: Logger.Level = .trace
        var metadata: Logger.Metadata = [:]
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) { sink.lines.withLock { $0.append("\(event.message)") } }
    }
}

/// Set once something happened.
final class Flag: Sendable {
    private let value = Locked(false)
    var isSet: Bool { value.withLock { $0 } }
    func set() { value.withLock { $0 = true } }
}

/// Waits until `condition` holds; false after `timeout` (the caller's #expect then fails).
func eventually(within timeout: Duration = .seconds(30), _ condition: () async -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(2))
    }
    return await condition()
}
