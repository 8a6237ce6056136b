import Locking
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOWebSocket
import Synchronization

/// TCP (and TLS for wss://) to a `WebSocketTarget`, then the HTTP/1.1 upgrade: what is left is
/// a channel of WebSocket frames.
enum WebSocketDial {
    typealias Frames = NIOAsyncChannel<WebSocketFrame, WebSocketFrame>

    private enum Upgrade: Sendable {
        case upgraded(Frames)
        case declined
    }

    /// Connects and upgrades. A cancel while waiting for the server's answer closes the socket
    /// (the caller's handshake timer cancels); the TCP connect alone is bounded by
    /// `connectTimeout`.
    static func open(_ target: WebSocketTarget, subprotocol: String, limits: TextWebSocket.Limits) async throws -> Frames {
        let tls = target.secure ? try await sharedTLSContext() : nil
        let bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.nanoseconds(limits.handshakeTimeout.nanoseconds))
        let (channel, upgrade) = try await bootstrap.connect(host: target.host, port: target.port) { channel in
            channel.eventLoop.makeCompletedFuture {
                if let tls {
                    // No SNI for an address: NIOSSL then checks the certificate's IP SANs
                    // against the address connected to.
                    let handler = try NIOSSLClientHandler(context: tls, serverHostname: target.isAddress ? nil : target.host)
                    try channel.pipeline.syncOperations.addHandler(handler)
                }
                var pipeline = NIOUpgradableHTTPClientPipelineConfiguration(upgradeConfiguration: upgradeConfiguration(target, subprotocol, limits))
                // Frames the server sends right after its 101 arrive with it: keep them.
                pipeline.leftOverBytesStrategy = .forwardBytes
                let upgrade = try channel.pipeline.syncOperations.configureUpgradableHTTPClientPipeline(configuration: pipeline)
                return (channel, upgrade)
            }
        }
        let result: Upgrade
        do {
            result = try await withTaskCancellationHandler { try await upgrade.get() } onCancel: { channel.close(promise: nil) }
        } catch is NIOHTTPClientUpgradeError {
            channel.close(promise: nil)
            throw DialFailure(reason: "the server's answer to the WebSocket upgrade was not valid (Sec-WebSocket-Accept or Upgrade header)")
        }
        switch result {
        case .upgraded(let frames): return frames
        case .declined:
            channel.close(promise: nil)
            throw DialFailure(reason: "the server answered without switching to WebSocket: is the URL's path a WebSocket endpoint?")
        }
    }

    /// The upgrade request: Host (IPv6 in brackets), Origin, the subprotocol; NIO's upgrader adds
    /// a random 16-byte Sec-WebSocket-Key and checks the server's Sec-WebSocket-Accept. The
    /// subprotocol the server picks is not checked, as before: Janus and RabbitMQ answer with
    /// the one asked for, and a server that does not speak it fails at the first message.
    private static func upgradeConfiguration(_ target: WebSocketTarget, _ subprotocol: String, _ limits: TextWebSocket.Limits) -> NIOTypedHTTPClientUpgradeConfiguration<Upgrade> {
        let upgrader = NIOTypedWebSocketClientUpgrader<Upgrade>(maxFrameSize: limits.maxMessageBytes) { channel, _ in
            // NIO's protocol error handler stays (the default): a frame over `maxFrameSize`
            // gets a 1009 close from it and the channel closes.
            channel.eventLoop.makeCompletedFuture { .upgraded(try Frames(wrappingChannelSynchronously: channel)) }
        }
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: target.hostHeader)
        headers.add(name: "Origin", value: target.origin)
        headers.add(name: "Sec-WebSocket-Protocol", value: subprotocol)
        let head = HTTPRequestHead(version: .http1_1, method: .GET, uri: target.requestURI, headers: headers)
        return NIOTypedHTTPClientUpgradeConfiguration(upgradeRequestHead: head, upgraders: [upgrader]) { channel in
            channel.eventLoop.makeSucceededFuture(.declined)
        }
    }

    /// The handshake failed after TCP connected.
    struct DialFailure: Error, CustomStringConvertible {
        let reason: String
        var description: String { reason }
    }

    private static let tlsContext = Locked<NIOSSLContext?>(nil)

    /// One client context for every wss:// connection: the system's trust store, full
    /// verification (NIOSSL's defaults, as before). Made once, on NIO's thread pool: it reads
    /// the trust store from disk.
    private static func sharedTLSContext() async throws -> NIOSSLContext {
        if let made = tlsContext.withLock({ $0 }) { return made }
        let made = try await NIOThreadPool.singleton.runIfActive { try NIOSSLContext(configuration: .makeClientConfiguration()) }
        return tlsContext.withLock { kept in
            if let kept { return kept }
            kept = made
            return made
        }
    }
}

extension Duration {
    /// Whole nanoseconds (saturating): NIO's `TimeAmount` counts them.
    var nanoseconds: Int64 {
        let (seconds, atto) = components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : whole.addingReportingOverflow(atto / 1_000_000_000).partialValue
    }
}
