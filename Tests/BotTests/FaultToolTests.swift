import Foundation
import Testing
import TestSupport

/// The fault tools themselves, on sockets of their own: they must break what they say and
/// clean up after themselves. Only inside scripts/in-netns: the rules go into the firewall of
/// the namespace they run in.
@Suite(.enabled(if: ProcessInfo.processInfo.environment["SFUBOT_IN_NETNS"] == "1", "changes the firewall: run inside scripts/in-netns"))
struct FaultToolTests {
    @Test("ss -K aborts a connection to the port, reports it, and refuses when there is none")
    func killWebSocketsKillsWhatItSays() async throws {
        let listener = try SilentListener()
        let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(client) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(listener.port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &addr) { a in
            a.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(client, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        try #require(connected)
        #expect(try await Faults.killWebSockets(port: listener.port) == 1)
        var byte: UInt8 = 0
        #expect(recv(client, &byte, 1, 0) == -1 && errno == ECONNABORTED, "the client sees its connection aborted")
        await #expect(throws: Faults.Failed.self) { _ = try await Faults.killWebSockets(port: listener.port) }
    }

    @Test("the UDP drop is in place while it lasts and gone after, also when its task is cancelled")
    func dropUDPCleansUpOnCancel() async throws {
        let ports = 12900...12909
        let drop = Task { try await Faults.dropUDP(ports: ports, for: .seconds(60)) }
        let clock = ContinuousClock(), t0 = clock.now
        while try await !Faults.dropping(ports: ports), clock.now - t0 < .seconds(10) { try await Task.sleep(for: .milliseconds(50)) }
        #expect(try await Faults.dropping(ports: ports), "the rules went in")
        drop.cancel()
        await #expect(throws: CancellationError.self) { _ = try await drop.value }
        #expect(try await !Faults.dropping(ports: ports), "cancelled, the rules are gone")
        #expect(clock.now - t0 < .seconds(40), "cancelled, it did not wait its 60 s (bound loose for a loaded machine)")
        await #expect(throws: Faults.Failed.self) { _ = try await Faults.dropUDP(ports: 1...65535, for: .seconds(1)) }
    }
}
