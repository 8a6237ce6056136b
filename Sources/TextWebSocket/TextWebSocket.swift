import Foundation
import HTTPTypes
public import Logging
import NIOCore
import NIOWebSocket
import Synchronization
import WSClient
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
        public init() {}
    }

    public let incoming: AsyncStream<String>
    private let outgoing: AsyncStream<String>.Continuation
    private let task: Locked<Task<Void, Never>?> = Locked(nil)
    private let brokenRule = Locked<String?>(nil)

    private init(incoming: AsyncStream<String>, outgoing: AsyncStream<String>.Continuation) {
        self.incoming = incoming
        self.outgoing = outgoing
    }

    /// Why this side closed the connection because the server broke a limit (a message or a
    /// frame too large); nil while open and after an ordinary close or loss.
    public var violation: String? { brokenRule.withLock { $0 } }

    /// Opens the socket; returns once the WebSocket handshake succeeded, else throws with the reason.
    public static func connect(url: String, subprotocol: String, limits: Limits = .init(), logger: Logger) async throws(Unreachable) -> TextWebSocket {
        if let problem = unsupported(url) { throw Unreachable(url: url, reason: problem) }
        let (incoming, incomingContinuation) = AsyncStream.makeStream(of: String.self)
        let (outgoingStream, outgoing) = AsyncStream.makeStream(of: String.self)
        let socket = TextWebSocket(incoming: incoming, outgoing: outgoing)
        let opened = OpenSignal()
        var config = WebSocketClientConfiguration(maxFrameSize: limits.maxMessageBytes, closeTimeout: limits.closeTimeout)
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
                        do {
                            try await Self.read(inbound, limit: limits.maxMessageBytes, into: incomingContinuation)
                        } catch let tooLarge as TooLarge {
                            // Stop delivering at once: the close handshake below may take
                            // `closeTimeout` if the server does not answer it.
                            socket.brokenRule.withLock { $0 = tooLarge.description }
                            logger.error("closing the WebSocket: the server sent \(tooLarge)", metadata: ["ws.url": "\(url)"])
                            incomingContinuation.finish()
                            try? await outbound.close(.messageTooLarge, reason: "over \(limits.maxMessageBytes) bytes")
                        } catch NIOWebSocketError.invalidFrameLength {
                            let tooLarge = TooLarge(what: "a frame", limit: limits.maxMessageBytes)
                            socket.brokenRule.withLock { $0 = tooLarge.description }
                            logger.error("closing the WebSocket: the server sent \(tooLarge)", metadata: ["ws.url": "\(url)"])
                            incomingContinuation.finish()
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

    /// Joins fragments into text messages, refusing any message over `limit` bytes.
    private static func read(_ inbound: WebSocketInboundStream, limit: Int, into sink: AsyncStream<String>.Continuation) async throws {
        var message = ByteBuffer()
        var isText = false
        var inMessage = false
        for try await frame in inbound {
            switch frame.opcode {
            case .text, .binary:
                message.clear()
                isText = frame.opcode == .text
                inMessage = true
            case .continuation:
                guard inMessage else { continue }  // a stray continuation belongs to nothing
            }
            guard message.readableBytes + frame.data.readableBytes <= limit else { throw TooLarge(what: "a message", limit: limit) }
            var data = frame.data
            message.writeBuffer(&data)
            if frame.fin {
                inMessage = false
                if isText { sink.yield(String(buffer: message)) }
            }
        }
    }

    /// Why WSClient would not connect where `url` says, or nil. Its own URL parser takes the
    /// host up to the first ":": `ws://user:pw@janus` would reach host `user` (and send no
    /// credentials), `ws://[::1]:8188` host `[`. Such URLs are refused rather than misread.
    static func unsupported(_ url: String) -> String? {
        guard let c = URLComponents(string: url), c.host?.isEmpty == false else { return "not a URL with a host" }
        if c.user != nil || c.password != nil { return "a user or password in the URL (user:password@) is not supported" }
        if url.contains("[") || c.host?.contains(":") == true { return "an IPv6 literal host is not supported by the WebSocket client: use a host name" }
        return nil
    }

    /// The socket could not be opened.
    public struct Unreachable: Error, CustomStringConvertible {
        public let url: String, reason: String
        public var description: String { "\(url) unreachable: \(reason)" }
    }

    /// A message or frame over the limit.
    private struct TooLarge: Error, CustomStringConvertible {
        let what: String, limit: Int
        var description: String {
            "\(what) over " + (limit % (1 << 20) == 0 ? "\(limit >> 20) MiB" : "\(limit) bytes") + " (the limit)"
        }
    }

    public func send(_ text: String) { outgoing.yield(text) }

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
