import HTTPTypes
public import Logging
import NIOWebSocket
import Synchronization
import WSClient

/// A client WebSocket carrying text messages in one subprotocol (`janus-protocol` for Janus,
/// `v12.stomp` for RabbitMQ's Web-STOMP). Incoming text is an `AsyncStream`; sends are queued.
public final class TextWebSocket: Sendable {
    public let incoming: AsyncStream<String>
    private let outgoing: AsyncStream<String>.Continuation
    private let task: Mutex<Task<Void, Never>?> = Mutex(nil)

    private init(incoming: AsyncStream<String>, outgoing: AsyncStream<String>.Continuation) {
        self.incoming = incoming
        self.outgoing = outgoing
    }

    /// Opens the socket; returns once the WebSocket handshake succeeded, else throws with the reason.
    public static func connect(url: String, subprotocol: String, logger: Logger) async throws(Unreachable) -> TextWebSocket {
        let (incoming, incomingContinuation) = AsyncStream.makeStream(of: String.self)
        let (outgoingStream, outgoing) = AsyncStream.makeStream(of: String.self)
        let socket = TextWebSocket(incoming: incoming, outgoing: outgoing)
        let opened = OpenSignal()
        var config = WebSocketClientConfiguration(maxFrameSize: 1 << 22)
        config.additionalHeaders[HTTPField.Name("Sec-WebSocket-Protocol")!] = subprotocol
        let task = Task {
            let client = WebSocketClient(url: url, configuration: config, logger: logger) { inbound, outbound, _ in
                opened.succeed()
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        for await text in outgoingStream { try await outbound.write(.text(text)) }
                        try await outbound.close(.normalClosure, reason: nil)
                    }
                    group.addTask {
                        for try await message in inbound.messages(maxSize: 1 << 24) {
                            if case .text(let text) = message { incomingContinuation.yield(text) }
                        }
                    }
                    _ = try await group.next()
                    group.cancelAll()
                }
            }
            var failure: any Error = Unreachable(url: url, reason: "the connection closed")
            do { try await client.run() } catch { failure = error }
            incomingContinuation.finish()
            opened.fail(failure)
        }
        socket.task.withLock { $0 = task }
        do { try await opened.wait() } catch {
            throw Unreachable(url: url, reason: String(describing: error))
        }
        return socket
    }

    /// The socket could not be opened.
    public struct Unreachable: Error, CustomStringConvertible {
        public let url: String, reason: String
        public var description: String { "\(url) unreachable: \(reason)" }
    }

    public func send(_ text: String) { outgoing.yield(text) }

    /// Closes the socket (sends a close frame after what is queued).
    public func close() { outgoing.finish() }

    /// Waits until the connection task ended.
    public func closed() async { await task.withLock { $0 }?.value }
}

/// Resolves once: the WebSocket opened, or the connection task ended first.
private final class OpenSignal: Sendable {
    private enum State {
        case waiting(CheckedContinuation<Void, any Error>?)
        case done((any Error)?)
    }
    private let state = Mutex(State.waiting(nil))

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
