import Foundation
import Testing
import TestSupport

extension MediaScene.RelayTests {
    /// A destination slower than the stream (a proxy in front of nginx that takes 8 kB a second
    /// of a stream of about 55): the relay keeps the call (every frame still opens), drops in
    /// its output what the destination cannot take, counts it, says so, and ends incomplete
    /// (exit 74) rather than claim a stream it did not deliver.
    @Test func aSlowDestinationDropsCountedAndKeepsTheCall() async throws {
        let ran = try await SlowDestination.relay(seconds: 16)
        let dropped = SlowDestination.dropped(ran)
        print("slow destination: \(dropped.map(String.init) ?? "?") frames dropped in the output")
        #expect((dropped ?? 0) > 50, "\(ran.outText)")
        #expect(ran.status == 74 && ran.errText.contains("dropped in the output"), "exit \(ran.status): \(ran.errText.suffix(1500))")
        #expect(ran.errText.contains("takes the stream slower than it comes"), "said while it happens: \(ran.errText.suffix(1500))")
        // The call is kept: the input is never held back by the output.
        let opened = ran.outText.firstMatch(of: /audio frames received: ([0-9]+), opened: ([0-9]+)/).flatMap { Int($0.2) } ?? 0
        #expect(opened >= 500, "audio frames opened: \(opened) in about 14 s: \(ran.outText)")
    }

    /// How a user ends a relay stuck behind a slow destination: SIGTERM. Its output's queue is
    /// full and the socket will not take more, yet it ends within seconds, not when the
    /// destination has drained, and says what it dropped (exit 74, the count).
    @Test func sigtermEndsARelayStuckOnASlowDestination() async throws {
        let clock = ContinuousClock()
        var signalled: ContinuousClock.Instant?
        let ran = try await SlowDestination.relay(seconds: 60) { relay in
            try await Task.sleep(for: .seconds(10))
            signalled = clock.now
            relay.signal(SIGTERM)
        }
        let took = try #require(signalled).duration(to: clock.now)
        print("slow destination, SIGTERM: ended \(took) after the signal")
        #expect(took < .seconds(8), "ended \(took) after SIGTERM")
        #expect(ran.status == 74 && ran.errText.contains("dropped in the output"), "exit \(ran.status): \(ran.errText.suffix(1500))")
        #expect((SlowDestination.dropped(ran) ?? 0) > 20, "\(ran.outText)")
    }
}

/// The relay to nginx through a proxy that passes 8 kB/s, with this namespace's TCP send
/// buffers capped; `during` runs while the relay does (e.g. to signal it).
enum SlowDestination {
    static func relay(seconds: Int, during: (ChildProcess) async throws -> Void = { _ in }) async throws -> ChildProcess.Finished {
        // Loopback never loses a packet, so a sender's socket grows its buffer to 4 MB (over a
        // minute of this stream) and nothing would ever wait; a real path's losses keep it
        // near its bandwidth times its delay. This namespace's TCP sockets get 64 kB at most
        // while the test runs (the relay's among them; restored after).
        let wmem = "/proc/sys/net/ipv4/tcp_wmem"
        let saved = try String(contentsOfFile: wmem, encoding: .utf8)
        try "4096 16384 65536".write(toFile: wmem, atomically: false, encoding: .utf8)
        defer { try? saved.write(toFile: wmem, atomically: false, encoding: .utf8) }
        let dir = try Scene.tempDirectory("relay-slow")
        let source = try await RelayCase.source(in: dir)
        let (port, proxyPort) = (try RelayServers.freePort(), try RelayServers.freePort())
        let nginx = try await RelayServers.nginxRTMP(port: port, in: dir)
        let proxy = try await LocalServer.start(URL(fileURLWithPath: "/usr/bin/python3"),
                                                [S3Venv.script("slow_proxy.py").path, "\(proxyPort)", "\(port)", "8000"], port: proxyPort)
        let room = try await Scene.createRoom()
        let publisher = try RelayCase.publisher(source, room: room)
        let relay = try RelayCase.relay(to: "rtmp://127.0.0.1:\(proxyPort)/live/slow", room: room, seconds: seconds)
        var failed: (any Error)?
        do { try await during(relay) } catch { failed = error; relay.signal(SIGKILL) }
        let ran = await relay.finished()
        publisher.signal(SIGKILL)
        await proxy.stop()
        await nginx.stop()
        if let failed { throw failed }
        return ran
    }

    static func dropped(_ ran: ChildProcess.Finished) -> Int? {
        ran.outText.firstMatch(of: /dropped in the output \(the destination too slow\): ([0-9]+)/).flatMap { Int($0.1) }
    }
}
