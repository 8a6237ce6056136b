@testable import Bot
import Foundation
import Logging
import Testing

/// The `turns:` bridge without Janus or coturn: where it listens, what it keeps of a failure,
/// and that closing it leaves nothing listening.
@Suite struct TURNTLSBridgeTests {
    @Test("a bridge listens on 127.0.0.1 until closed; a TURN server out of reach closes libnice's connection and is kept as the failure")
    func listensAndCloses() async throws {
        let server = try ICEServer(parsing: "turns:127.0.0.1:1")
        let ice = ICEServers(servers: [server], credential: .password(username: "u", password: "p"), policy: .relay)
        let bridges = try #require(try await TURNTLSBridges.open(for: [ice], logger: Logger(label: "test")))
        let port = try #require(bridges.port(for: server))
        let uri = ice.turnURIs(bridged: { bridges.port(for: $0) })
        #expect(uri == ["turn://u:p@127.0.0.1:\(port)?transport=tcp"])
        // libnice's side: accepted, then closed once the TLS side cannot connect (port 1).
        let closedByBridge = await Task.detached { Self.connectAndAwaitClose(port: port, within: 10) }.value
        #expect(closedByBridge == .closedByPeer, "the bridge closed the connection it could not carry: \(closedByBridge)")
        #expect(bridges.failure?.contains("could not connect to the TURN server 127.0.0.1:1") == true, "\(bridges.failure ?? "no failure")")
        bridges.close()
        // Closing is asynchronous on the event loop: give it a moment, then nothing listens.
        var refused = false
        for _ in 0..<50 where !refused {
            refused = await Task.detached { Self.connectAndAwaitClose(port: port, within: 1) }.value == .refused
            if !refused { try await Task.sleep(for: .milliseconds(20)) }
        }
        #expect(refused, "nothing listens on 127.0.0.1:\(port) after close")
    }

    enum Outcome: Equatable { case refused, closedByPeer, stillOpen }

    /// Connects to 127.0.0.1:`port` and waits for the far end to close. Blocks: off the pool.
    static func connectAndAwaitClose(port: Int, within seconds: Int32) -> Outcome {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return .refused }
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = UInt16(port).bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard connected == 0 else { return .refused }
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&p, 1, seconds * 1000) == 1 else { return .stillOpen }
        var byte: UInt8 = 0
        return read(fd, &byte, 1) <= 0 ? .closedByPeer : .stillOpen
    }
}
