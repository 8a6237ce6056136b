import ECall
import Foundation
import Logging
import Testing

/// One connection at a time, whoever asks for it: two `start()`s, `start()` while the reconnect
/// loop connects, and `close()` while connecting. No network: a fake socket factory that can hold
/// each open until the test lets it go.
@Suite(.timeLimit(.minutes(1))) struct StompConnectRaceTests {
    func client(_ network: FakeStompNetwork, log: LogLines = LogLines()) -> StompClient {
        var o = StompClient.Options(url: "ws://stomp.invalid/ws", host: "ecall")
        // Far above any step here: a loaded CI machine must not turn a held open into a timeout.
        o.connectTimeout = .seconds(30)
        return StompClient(options: o, logger: log.logger(), credentials: { .init(login: "device-1", passcode: "token") },
                           connect: network.connector)
    }

    /// The second `start()` arrives while the first one's socket is still opening.
    @Test func twoStartsMakeOneConnection() async throws {
        let network = FakeStompNetwork(), log = LogLines()
        let c = client(network, log: log)
        network.hold()
        let first = Task { try await c.start() }
        #expect(await eventually { network.opens == 1 })
        let second = Task { try await c.start() }
        // The second start has either joined the first (logged) or opened a socket of its own.
        #expect(await eventually { network.opens == 2 || log.contains("joins the connection in flight") })
        network.release()
        try await first.value
        try await second.value
        #expect(network.opens == 1, "one socket")
        #expect(network.sockets.map(\.connects).reduce(0, +) == 1, "one CONNECT")
        #expect(await c.counters.connections == 1)
        await c.close()
        #expect(network.open.isEmpty)
    }

    /// After a drop the reconnect loop is opening a socket when `start()` is called again.
    @Test func startWhileTheReconnectLoopConnectsMakesNoSecondConnection() async throws {
        let network = FakeStompNetwork()
        let c = client(network)
        try await c.start()
        network.hold()
        network.sockets[0].drop()
        #expect(await eventually { network.opens == 2 }, "the reconnect loop opens a socket (after its 1 s pause)")
        let returned = Flag()
        let again = Task { try await c.start(); returned.set() }
        #expect(await eventually { network.opens == 3 || returned.isSet })
        network.release()
        #expect(await eventually { await c.counters.connections == 2 })
        try await again.value
        #expect(network.opens == 2, "no socket beside the reconnect loop's")
        #expect(network.open.count == 1, "one live socket: \(network.open.count)")
        #expect(network.open.map(\.connects) == [1])
        await c.close()
        #expect(network.open.isEmpty)
    }

    /// `close()` while the socket is opening: the client ends closed, with no socket left open
    /// and no CONNECT sent, and `start()` says it was closed.
    @Test func closeDuringConnectWins() async throws {
        let network = FakeStompNetwork()
        let c = client(network)
        network.hold()
        let start = Task { try await c.start() }
        #expect(await eventually { network.opens == 1 })
        let closed = Flag()
        let close = Task { await c.close(); closed.set() }
        // close() has either returned or cancelled the open in flight.
        #expect(await eventually { network.cancelledOpens == 1 || closed.isSet })
        network.release()
        await close.value
        await #expect(throws: StompError.closed) { try await start.value }
        #expect(await eventually { network.sockets.count == 1 })
        #expect(network.open.isEmpty, "the socket that opened late was closed")
        #expect(network.sockets.map(\.connects) == [0], "no CONNECT on it")
        #expect(await c.counters.connections == 0)
        await #expect(throws: StompError.closed) { try await c.start() }
        await #expect(throws: StompError.closed) { try await c.send("/exchange/x", body: Data()) }
    }

    /// CONNECTED read before `start` waits for it (the server answers within the same turn) is
    /// kept, not dropped: `start` returns instead of hanging.
    @Test func aConnectedThatComesAtOnceIsNotLost() async throws {
        let network = FakeStompNetwork(answerAtOnce: true)
        let c = client(network)
        try await c.start()
        #expect(await c.counters.connections == 1)
        await c.close()
    }

    @Test func errorsAreClassifiedByProperties() {
        #expect(StompError.refused("x").isRefused && !StompError.refused("x").isConnectionProblem)
        #expect(StompError.notConnected.isConnectionProblem && StompError.notConnected != .closed)
        #expect(StompError.refused("bad token").description.contains("check the device login"))
    }

    /// Subscriptions made before the connection are sent once it is up, and again after a drop.
    @Test func subscriptionsAreSentOncePerConnection() async throws {
        let network = FakeStompNetwork()
        let c = client(network)
        _ = await c.subscribe("/exchange/ecall.signal.out/1")
        try await c.start()
        network.sockets[0].drop()
        #expect(await eventually { await c.counters.connections == 2 })
        for socket in network.sockets {
            #expect(socket.frames.map(\.command) == ["CONNECT", "SUBSCRIBE"])
        }
        await c.close()
        #expect(network.sockets.last?.frames.last?.command == "DISCONNECT")
    }
}
