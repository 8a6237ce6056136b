import Foundation
import Locking
import Synchronization
import Logging
import NIOCore
import NIOPosix
import NIOSSL

/// sfubot's own TLS to one `turns:` server. libnice 0.1.21 (webrtcbin's ICE in Debian 12) sends
/// a `turns:` Allocate in the clear (`TURNTests.turnsIsPlaintext`), so libnice gets
/// `turn:127.0.0.1:PORT?transport=tcp` instead, and each TCP connection it opens there is piped
/// to a TLS connection to the real server: its chain verified against `--turn-ca-file` (or the
/// system's CAs), the URL's host checked against the certificate, SNI set. Bytes pass as they
/// are (TURN's framing and MESSAGE-INTEGRITY are end to end); nothing but addresses and TLS
/// failures is logged. Everything runs on NIO's event loops, never on the cooperative pool.
final class TURNTLSBridge: Sendable {
    let server: ICEServer
    /// Where libnice connects: 127.0.0.1, an ephemeral port.
    let port: Int
    let state: State
    private let listener: any Channel

    private init(server: ICEServer, port: Int, state: State, listener: any Channel) {
        self.server = server
        self.port = port
        self.state = state
        self.listener = listener
    }

    /// Listens on 127.0.0.1 for libnice's connections to `server`.
    static func open(to server: ICEServer, tls: NIOSSLContext, caFile: String?, logger: Logger) async throws -> TURNTLSBridge {
        let state = State(server: server, caFile: caFile, logger: logger)
        let host = server.connectHost
        // SNI takes names only; an IP address is checked against the certificate's IP entries.
        let sni = server.isIPAddress ? nil : host
        let listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(ChannelOptions.backlog, value: 16)
            // Nothing is read from libnice before the TLS side is up (TLSHandshakeHandler).
            .childChannelOption(ChannelOptions.autoRead, value: false)
            .childChannelInitializer { inbound in
                state.track(inbound)
                let accepted = ContinuousClock.now
                let connecting = ClientBootstrap(group: inbound.eventLoop)
                    .connectTimeout(.seconds(10))
                    .channelInitializer { outbound in
                        outbound.eventLoop.makeCompletedFuture {
                            try outbound.pipeline.syncOperations.addHandler(NIOSSLClientHandler(context: tls, serverHostname: sni))
                            try outbound.pipeline.syncOperations.addHandler(TLSHandshakeHandler(inbound: inbound, accepted: accepted, state: state))
                        }
                    }
                    .connect(host: host, port: server.port)
                connecting.whenSuccess { state.track($0) }
                connecting.whenFailure { error in
                    state.unreachable(error, accepted: accepted)
                    inbound.close(promise: nil)
                }
                return inbound.eventLoop.makeSucceededVoidFuture()
            }
            .bind(host: "127.0.0.1", port: 0).get()
        guard let port = listener.localAddress?.port else {
            try? await listener.close()
            throw ICEConfigError.bridge(server.description, "the local listener has no port")
        }
        logger.debug("turns: \(server.hostPort) through sfubot's TLS on 127.0.0.1:\(port)")
        return TURNTLSBridge(server: server, port: port, state: state, listener: listener)
    }

    /// Stops listening and closes every connection (libnice's and the TLS ones). Returns at once.
    func close() {
        listener.close(promise: nil)
        state.closeAll()
    }

    /// What the bridge's connections have to tell: the last failure, and the channels to close.
    final class State: Sendable {
        let server: ICEServer
        let caFile: String?
        let logger: Logger
        private let current = Locked<(failure: String?, channels: [ObjectIdentifier: any Channel], closed: Bool)>((nil, [:], false))
        private let watchers = Locked<(next: Int, all: [Int: (since: ContinuousClock.Instant, to: AsyncStream<String>.Continuation)])>((0, [:]))

        init(server: ICEServer, caFile: String?, logger: Logger) {
            self.server = server
            self.caFile = caFile
            self.logger = logger
        }

        /// The last connection's failure, for the user; nil once one got through.
        var failure: String? { current.withLock { $0.failure } }

        func track(_ channel: any Channel) {
            let id = ObjectIdentifier(channel)
            let closed = current.withLock { s in
                if !s.closed { s.channels[id] = channel }
                return s.closed
            }
            if closed { return channel.close(promise: nil) }
            channel.closeFuture.whenComplete { [weak self] _ in self?.current.withLock { _ = $0.channels.removeValue(forKey: id) } }
        }

        func closeAll() {
            let channels = current.withLock { s in
                s.closed = true
                defer { s.channels = [:] }
                return Array(s.channels.values)
            }
            for c in channels { c.close(promise: nil) }
        }

        func connected() { current.withLock { $0.failure = nil } }

        /// The failure of every connection libnice opens from now on goes to `continuation`
        /// too, until its stream ends (not those of an earlier PeerConnection still failing).
        func watch(_ continuation: AsyncStream<String>.Continuation) {
            let since = ContinuousClock.now
            let id = watchers.withLock { w in
                defer { w.next += 1 }
                w.all[w.next] = (since, continuation)
                return w.next
            }
            continuation.onTermination = { [weak self] _ in self?.watchers.withLock { _ = $0.all.removeValue(forKey: id) } }
        }

        func unreachable(_ error: any Error, accepted: ContinuousClock.Instant) {
            note("could not connect to the TURN server \(server.hostPort) (turns:): \(error)", accepted: accepted)
        }

        /// A handshake that failed (`error`) or that the server closed (nil), on a connection
        /// libnice opened at `accepted`.
        func failed(_ error: (any Error)?, accepted: ContinuousClock.Instant) {
            guard let error else {
                return note("the TURN server \(server.hostPort) closed the TLS connection during the handshake: is \(server.port) its TLS port (tls-listening-port)?",
                            accepted: accepted)
            }
            note(Self.describe(error, host: server.connectHost, caFile: caFile) ?? "TLS with the TURN server \(server.hostPort) failed: \(error)", accepted: accepted)
        }

        /// A certificate that did not verify, in the words the participant's failure uses.
        static func describe(_ error: any Error, host: String, caFile: String?) -> String? {
            let against = caFile ?? "the system's trusted CAs (give --turn-ca-file for a private CA)"
            let reason: String
            if let e = error as? NIOSSLExtraError, e == .failedToValidateHostname {
                reason = "it is not for \(host)"
            } else if case NIOSSLError.handshakeFailed(let e) = error, "\(e)".contains("CERTIFICATE_VERIFY_FAILED") {
                reason = "no certificate in it signs the server's, or the server's is out of date (CERTIFICATE_VERIFY_FAILED)"
            } else {
                return nil
            }
            return "the TURN server's certificate for \(host) did not verify against \(against): \(reason)"
        }

        private func note(_ text: String, accepted: ContinuousClock.Instant) {
            let changed = current.withLock { s in
                defer { s.failure = text }
                return s.failure != text
            }
            // libnice tries again with every new PeerConnection: one line per new reason.
            if changed { logger.error("\(text)") }
            for w in watchers.withLock({ Array($0.all.values) }) where w.since <= accepted { w.to.yield(text) }
        }
    }
}

extension ICEServer {
    /// The host to connect to and check the certificate against (an IPv6 address without brackets).
    var connectHost: String { host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host }

    var isIPAddress: Bool {
        var v4 = in_addr(), v6 = in6_addr()
        return inet_pton(AF_INET, connectHost, &v4) == 1 || inet_pton(AF_INET6, connectHost, &v6) == 1
    }
}
