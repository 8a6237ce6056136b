import Locking
import NIOCore
import NIOWebSocket
import Synchronization

/// An upgraded WebSocket, run until either side closes: queued text goes out as masked frames
/// (RFC 6455 §5.3: a fresh random key each), fragments are joined into messages within the
/// limit, pings are answered, and the close handshake runs both ways.
struct WebSocketConversation {
    let limits: TextWebSocket.Limits
    /// A client masks what it sends (RFC 6455 §5.3); a server (`WebSocketListener`) must not.
    var masked = true
    /// Receives each text message, in order.
    let deliver: @Sendable (String) -> Void
    /// Told once when the server broke a limit, before the 1009 close goes out.
    let violated: @Sendable (TooLarge) -> Void

    /// Returns once the connection is closed: after the close handshake, the server's close, a
    /// broken limit, or the loss of TCP.
    func run(_ frames: WebSocketDial.Frames, sending outgoing: AsyncStream<TextWebSocket.Outgoing>) async throws {
        let closeSent = CloseOnce()
        try await frames.executeThenClose { inbound, outbound in
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await message in outgoing {
                        switch message {
                        case .text(let text): try await outbound.write(frame(.text, ByteBuffer(string: text)))
                        case .binary(let bytes): try await outbound.write(frame(.binary, ByteBuffer(bytes: bytes)))
                        }
                    }
                    guard !Task.isCancelled else { return }
                    if closeSent.claim() { try await outbound.write(close(.normalClosure)) }
                    // The reader ends this wait when the server's close arrives.
                    try await Task.sleep(for: limits.closeTimeout)
                }
                group.addTask {
                    do {
                        try await read(inbound, outbound, closeSent: closeSent)
                    } catch let tooLarge as TooLarge {
                        violated(tooLarge)
                        if closeSent.claim() { try? await outbound.write(close(.messageTooLarge)) }
                    } catch NIOWebSocketError.invalidFrameLength {
                        // NIO's protocol error handler already sent 1009 and is closing.
                        violated(TooLarge(what: "a frame", limit: limits.maxMessageBytes))
                    }
                }
                // Whichever ends first ends the other; `executeThenClose` then closes TCP.
                _ = try await group.next()
                group.cancelAll()
            }
        }
    }

    /// Joins fragments into text messages; answers pings and the server's close.
    private func read(_ inbound: NIOAsyncChannelInboundStream<WebSocketFrame>, _ outbound: NIOAsyncChannelOutboundWriter<WebSocketFrame>,
                      closeSent: CloseOnce) async throws {
        let limit = limits.maxMessageBytes
        var message = ByteBuffer()
        var isText = false
        var inMessage = false
        for try await frame in inbound {
            switch frame.opcode {
            case .ping:
                try await outbound.write(self.frame(.pong, frame.unmaskedData))
                continue
            case .pong:
                continue
            case .connectionClose:
                // Echo the server's status code (RFC 6455 §5.5.1) unless we closed first.
                if closeSent.claim() {
                    var data = frame.unmaskedData
                    let code = data.readableBytes >= 2 ? data.readWebSocketErrorCode() : nil
                    try? await outbound.write(code.map { close($0) } ?? self.frame(.connectionClose, ByteBuffer()))
                }
                return
            case .text, .binary:
                message.clear()
                isText = frame.opcode == .text
                inMessage = true
            case .continuation:
                guard inMessage else { continue }  // a stray continuation belongs to nothing
            default:
                continue  // reserved opcodes: NIO's decoder lets them through; nothing to do
            }
            var data = frame.unmaskedData
            guard message.readableBytes + data.readableBytes <= limit else { throw TooLarge(what: "a message", limit: limit) }
            message.writeBuffer(&data)
            if frame.fin {
                inMessage = false
                if isText { deliver(String(buffer: message)) }
            }
        }
    }

    private func frame(_ opcode: WebSocketOpcode, _ data: ByteBuffer) -> WebSocketFrame {
        WebSocketFrame(fin: true, opcode: opcode, maskKey: masked ? .random() : nil, data: data)
    }

    private func close(_ code: WebSocketErrorCode) -> WebSocketFrame {
        var data = ByteBuffer()
        data.write(webSocketErrorCode: code)
        return frame(.connectionClose, data)
    }
}

/// One close frame per connection, whichever side's task sends it.
private final class CloseOnce: Sendable {
    private let sent = Locked(false)

    /// True for the first caller only.
    func claim() -> Bool {
        sent.withLock { sent in
            defer { sent = true }
            return !sent
        }
    }
}

/// A message or frame over the limit.
struct TooLarge: Error, CustomStringConvertible {
    let what: String, limit: Int
    var description: String {
        "\(what) over " + (limit % (1 << 20) == 0 ? "\(limit >> 20) MiB" : "\(limit) bytes") + " (the limit)"
    }
}
