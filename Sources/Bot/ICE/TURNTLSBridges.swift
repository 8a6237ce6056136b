import Foundation
import Locking
import Logging
import GStreamerKit
import NIOSSL

/// The TLS bridges of one participant, one per `turns:` server (`TURNTLSBridge`): opened before
/// its first webrtcbin, closed when it ends, whatever the ending (`Recorder.run`, `Player.run`
/// are their one owner). Every PeerConnection of the participant uses the same bridges.
public final class TURNTLSBridges: Sendable {
    let bridges: [TURNTLSBridge]

    private init(_ bridges: [TURNTLSBridge]) { self.bridges = bridges }

    /// One bridge per `turns:` server of `sets` (each verified against its set's CA file; a
    /// server in two sets gets the first one's bridge); nil when they have none.
    static func open(for sets: [ICEServers], logger: Logger) async throws(BotError) -> TURNTLSBridges? {
        var opened: [TURNTLSBridge] = []
        do {
            for ice in sets where ice.servers.contains(where: { $0.scheme == .turns }) {
                // The CA file is read at each participant's start: on a thread of its own, since a
                // file system that hangs (NFS) must not hold the cooperative pool (serve's jobs).
                let context = try await OffPool.run { () throws -> NIOSSLContext in try NIOSSLContext(configuration: try ice.tlsConfiguration()) }
                for server in ice.servers where server.scheme == .turns && !opened.contains(where: { $0.server == server }) {
                    opened.append(try await TURNTLSBridge.open(to: server, tls: context, caFile: ice.caFile, logger: logger))
                }
            }
        } catch {
            for b in opened { b.close() }
            throw .negotiation("could not set up TLS to the turns: server: \(error)")
        }
        return opened.isEmpty ? nil : TURNTLSBridges(opened)
    }

    /// The local port libnice connects to for `server`.
    func port(for server: ICEServer) -> Int? { bridges.first { $0.server == server }?.port }

    /// Why the last TLS connection to a `turns:` server failed (a certificate that did not
    /// verify, a server out of reach); nil once one got through.
    public var failure: String? { bridges.lazy.compactMap(\.state.failure).first }

    /// The failures of the bridges' TLS connections from now on. libnice waits long for a
    /// TURN server over TCP that closed on it (no relay candidate, no end of gathering): a
    /// relay-only participant takes the first of these as its TURN failure instead.
    func failures() -> AsyncStream<String> {
        let (stream, continuation) = AsyncStream.makeStream(of: String.self, bufferingPolicy: .bufferingNewest(1))
        for b in bridges { b.state.watch(continuation) }
        return stream
    }

    /// Closes every listener and connection. Safe to call twice.
    public func close() { for b in bridges { b.close() } }
}

extension ICEServers {
    /// Client TLS to a `turns:` server: full verification (chain and host name) against the CA
    /// file, or the system's trust store without one; TLS 1.2 at least.
    func tlsConfiguration() throws(ICEConfigError) -> TLSConfiguration {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = .tlsv12
        tls.certificateVerification = .fullVerification
        if let caFile { tls.trustRoots = .certificates(try Self.certificates(in: caFile)) }
        return tls
    }

    /// Checks that `caFile` (if given) exists and holds PEM certificates: a usage error before
    /// joining rather than a refused TURN server later.
    /// `option` names where the file was given, in the error.
    public func checkCAFile(option: String = "--turn-ca-file") throws(ICEConfigError) {
        guard let caFile else { return }
        do { _ = try Self.certificates(in: caFile) } catch { throw error.naming(option) }
    }

    static func certificates(in path: String) throws(ICEConfigError) -> [NIOSSLCertificate] {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path) else { throw .caFile(path, "no such file") }
        // A FIFO would block the reader.
        guard attributes[.type] as? FileAttributeType == .typeRegular else { throw .caFile(path, "is not a regular file") }
        guard let data = FileManager.default.contents(atPath: path) else { throw .caFile(path, "cannot be read") }
        guard data.count <= 1 << 20 else { throw .caFile(path, "is over 1 MiB: not a CA file") }
        let certificates: [NIOSSLCertificate]
        do { certificates = try NIOSSLCertificate.fromPEMBytes(Array(data)) } catch {
            throw .caFile(path, "holds no PEM certificate (-----BEGIN CERTIFICATE-----) that parses: \(error)")
        }
        guard !certificates.isEmpty else { throw .caFile(path, "holds no PEM certificate (-----BEGIN CERTIFICATE-----)") }
        return certificates
    }
}

extension PeerLoss {
    /// A lost connection as the user should read it: with a `turns:` bridge whose last TLS
    /// connection failed, that failure (a certificate that did not verify) rather than a
    /// generic TURN or ICE failure.
    func explained(by bridges: TURNTLSBridges?) -> PeerLoss {
        guard let failure = bridges?.failure else { return self }
        switch self {
        case .turnFailed, .iceFailed: return .turnFailed(failure)
        default: return self
        }
    }

    var isTURNFailure: Bool { if case .turnFailed = self { true } else { false } }
}
