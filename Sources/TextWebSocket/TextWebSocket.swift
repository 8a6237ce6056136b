import Foundation
public import Logging
import Synchronization
import Locking

/// A client WebSocket carrying text messages in one subprotocol (`janus-protocol` for Janus,
/// `v12.stomp` for RabbitMQ's Web-STOMP). Incoming text is an `AsyncStream`; sends are queued.
///
/// Hostile or broken servers are bounded: the TCP connect and the WebSocket upgrade must finish
/// within `Limits.handshakeTimeout`, and a frame or a (fragmented) message over
/// `Limits.maxMessageBytes` closes the connection at once, with `violation` saying why.
public final class TextWebSocket: Sendable {
    /// What a server may cost this client before the connection is given up.
    public struct Limits: Sendable {
        /// Connect plus WebSocket upgrade. A port that accepts and never answers fails after this.
        public var handshakeTimeout: Duration = .seconds(10)
        /// The largest message (all its fragments) and the largest frame accepted. Janus's
        /// messages, SDP included, stay far below 1 MiB; STOMP frames here are a few KiB.
        public var maxMessageBytes = 4 << 20
        /// How long a close waits for the server's close frame before dropping TCP (the
        /// library's default of 15 s is what a hostile server made us wait).
        public var closeTimeout: Duration = .seconds(2)
        /// Messages queued for sending at most; a send beyond it is refused (`send` returns
        /// false) so a slow server costs memory it was allowed, no more. nil: unbounded (Janus,
        /// STOMP: their messages must all go).
        public var maxQueuedMessages: Int?
        public init() {}
    }

    public let incoming: AsyncStream<String>
    private let outgoing: AsyncStream<Outgoing>.Continuation
    private let task: Locked<Task<Void, Never>?> = Locked(nil)
    private let brokenRule = Locked<String?>(nil)

    private init(incoming: AsyncStream<String>, outgoing: AsyncStream<Outgoing>.Continuation) {
        self.incoming = incoming
        self.outgoing = outgoing
    }

    /// Why this side closed the connection because the server broke a limit (a message or a
    /// frame too large); nil while open and after an ordinary close or loss.
    public var violation: String? { brokenRule.withLock { $0 } }

    /// The server side of a connection a `WebSocketListener` accepted: the same queue, limits
    /// and close handshake, frames unmasked.
    static func accepted(_ frames: WebSocketDial.Frames, limits: Limits) -> TextWebSocket {
        let (incoming, incomingContinuation) = AsyncStream.makeStream(of: String.self)
        let (outgoingStream, outgoing) = AsyncStream.makeStream(of: Outgoing.self,
                                                                 bufferingPolicy: limits.maxQueuedMessages.map { .bufferingOldest($0) } ?? .unbounded)
        let socket = TextWebSocket(incoming: incoming, outgoing: outgoing)
        var conversation = WebSocketConversation(limits: limits, deliver: { incomingContinuation.yield($0) }) { tooLarge in
            socket.brokenRule.withLock { $0 = tooLarge.description }
            incomingContinuation.finish()
        }
        conversation.masked = false
        let task = Task {
            try? await conversation.run(frames, sending: outgoingStream)
            incomingContinuation.finish()
        }
        socket.task.withLock { $0 = task }
        return socket
    }

    /// Opens the socket; returns once the WebSocket handshake succeeded, else throws with the reason.
    public static func connect(url: String, subprotocol: String, limits: Limits = .init(), logger: Logger) async throws(Unreachable) -> TextWebSocket {
        let target: WebSocketTarget
        do { target = try WebSocketTarget(url) } catch { throw Unreachable(url: url, reason: error.reason) }
        let (incoming, incomingContinuation) = AsyncStream.makeStream(of: String.self)
        let (outgoingStream, outgoing) = AsyncStream.makeStream(of: Outgoing.self,
                                                                 bufferingPolicy: limits.maxQueuedMessages.map { .bufferingOldest($0) } ?? .unbounded)
        let socket = TextWebSocket(incoming: incoming, outgoing: outgoing)
        let opened = OpenSignal()
        let task = Task {
            var failure: any Error = Unreachable(url: url, reason: "the connection closed")
            do {
                let frames = try await WebSocketDial.open(target, subprotocol: subprotocol, limits: limits)
                opened.succeed()
                let conversation = WebSocketConversation(limits: limits, deliver: { incomingContinuation.yield($0) }) { tooLarge in
                    // Stop delivering at once, before the 1009 close goes out.
                    socket.brokenRule.withLock { $0 = tooLarge.description }
                    logger.error("closing the WebSocket: the server sent \(tooLarge)", metadata: ["ws.url": "\(url)"])
                    incomingContinuation.finish()
                }
                try await conversation.run(frames, sending: outgoingStream)
            } catch {
                failure = error
            }
            incomingContinuation.finish()
            opened.fail(failure)
        }
        socket.task.withLock { $0 = task }
        // A server that accepts and never answers the upgrade would hold us forever.
        let timer = Task {
            try? await Task.sleep(for: limits.handshakeTimeout)
            guard !Task.isCancelled else { return }
            opened.fail(Unreachable(url: url, reason: "no answer to the WebSocket handshake within \(limits.handshakeTimeout.spoken)"))
        }
        defer { timer.cancel() }
        do {
            // A stop (SIGTERM) while the server says nothing must not wait for the timeout.
            try await withTaskCancellationHandler { try await opened.wait() } onCancel: {
                opened.fail(Unreachable(url: url, reason: "stopped while connecting"))
            }
        } catch {
            // If the upgrade still completes later, the connection closes at once.
            outgoing.finish()
            task.cancel()
            if let e = error as? Unreachable { throw e }
            throw Unreachable(url: url, reason: String(describing: error))
        }
        return socket
    }

    /// The socket could not be opened.
    public struct Unreachable: Error, CustomStringConvertible {
        public let url: String, reason: String
        public var description: String { "\(url) unreachable: \(reason)" }
    }

    /// A message to send, as it waits in the queue.
    public enum Outgoing: Sendable {
        case text(String)
        /// A binary message (speaker streams' PCM).
        case binary([UInt8])
    }

    public func send(_ text: String) { outgoing.yield(.text(text)) }

    /// Queues a text or binary message; false if the queue was full (`Limits.maxQueuedMessages`)
    /// or the socket closed: the message is dropped, for the caller to count.
    @discardableResult
    public func enqueue(_ message: Outgoing) -> Bool {
        if case .enqueued = outgoing.yield(message) { return true }
        return false
    }

    /// Closes the socket (sends a close frame after what is queued).
    public func close() { outgoing.finish() }

    /// Waits until the connection task ended.
    public func closed() async { await task.withLock { $0 }?.value }
}

extension Duration {
    /// "10 s", "0.5 s": for messages.
    fileprivate var spoken: String {
        let (s, atto) = components
        return atto == 0 ? "\(s) s" : "\(Double(s) + Double(atto) / 1e18) s"
    }
}

/// Resolves once: the WebSocket opened, or the connection task ended first.
private final class OpenSignal: Sendable {
    private enum State {
        case waiting(CheckedContinuation<Void, any Error>?)
        case done((any Error)?)
    }
    private let state = Locked(State.waiting(nil))

    func succeed() { finish(nil) }
    func fail(_ error: any Error) { finish(error) }

    private func finish(_ error: (any Error)?) {
        let waiter: CheckedContinuation<Void, any Error>? = state.withLock { s in
            guard case .waiting(let c) = s else { return nil }
            s = .done(error)
            return c
        }
        if let error { waiter?.resume(throwing: error) } else { waiter?.resume() }
    }

    func wait() async throws {
        try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
            let result: (any Error)?? = state.withLock { s in
                switch s {
                case .waiting: s = .waiting(c); return .none
                case .done(let e): return .some(e)
                }
            }
            switch result {
            case .none: break
            case .some(.none): c.resume()
            case .some(.some(let e)): c.resume(throwing: e)
            }
        }
    }
}
