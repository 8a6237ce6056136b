import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket

/// A WebSocket server on one address (plain ws://, for consumers on the same host or network
/// that cannot accept connections themselves): every upgrade whose path `accepts` is handed on,
/// as a `TextWebSocket` (the server side: unmasked frames), with the path it asked for; any
/// other request is closed.
public final class WebSocketListener: Sendable {
    public struct Accepted: Sendable {
        public let path: String
        public let socket: TextWebSocket
    }

    /// Upgraded connections, in order; finishes when the listener closes.
    public let accepted: AsyncStream<Accepted>
    /// The port bound (the one asked for, or the kernel's choice for 0).
    public let port: Int
    private let channel: NIOAsyncChannel<EventLoopFuture<Upgrade>, Never>
    private let task: Task<Void, Never>

    enum Upgrade: Sendable {
        case upgraded(String, WebSocketDial.Frames)
        case declined
    }

    /// Binds `host:port` and starts accepting.
    public static func listen(host: String, port: Int, limits: TextWebSocket.Limits, accepts: @escaping @Sendable (String) -> Bool) async throws -> WebSocketListener {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .bind(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    let upgrader = NIOTypedWebSocketServerUpgrader<Upgrade>(
                        maxFrameSize: limits.maxMessageBytes,
                        shouldUpgrade: { channel, head in
                            channel.eventLoop.makeSucceededFuture(accepts(String(head.uri.prefix { $0 != "?" })) ? HTTPHeaders() : nil)
                        },
                        upgradePipelineHandler: { channel, head in
                            channel.eventLoop.makeCompletedFuture {
                                .upgraded(String(head.uri.prefix { $0 != "?" }), try WebSocketDial.Frames(wrappingChannelSynchronously: channel))
                            }
                        })
                    // Not a path it serves (or not an upgrade): closed, nothing answered.
                    let configuration = NIOTypedHTTPServerUpgradeConfiguration<Upgrade>(upgraders: [upgrader]) { channel in
                        channel.close(promise: nil)
                        return channel.eventLoop.makeSucceededFuture(.declined)
                    }
                    return try channel.pipeline.syncOperations.configureUpgradableHTTPServerPipeline(
                        configuration: .init(upgradeConfiguration: configuration))
                }
            }
        let (accepted, sink) = AsyncStream.makeStream(of: Accepted.self)
        let task = Task {
            try? await channel.executeThenClose { inbound in
                for try await upgrade in inbound {
                    Task {
                        switch try? await upgrade.get() {
                        case .upgraded(let path, let frames)?: sink.yield(Accepted(path: path, socket: TextWebSocket.accepted(frames, limits: limits)))
                        case .declined?, nil: break
                        }
                    }
                }
            }
            sink.finish()
        }
        return WebSocketListener(accepted: accepted, port: channel.channel.localAddress?.port ?? port, channel: channel, task: task)
    }

    private init(accepted: AsyncStream<Accepted>, port: Int, channel: NIOAsyncChannel<EventLoopFuture<Upgrade>, Never>, task: Task<Void, Never>) {
        self.accepted = accepted
        self.port = port
        self.channel = channel
        self.task = task
    }

    /// Stops accepting (connections already handed on stay theirs).
    public func close() async {
        channel.channel.close(promise: nil)
        await task.value
    }
}
