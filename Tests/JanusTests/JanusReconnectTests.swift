import Comeback
@testable import Janus
import JanusTesting
import Logging
import Synchronization
import Telemetry
import Testing
import Locking

/// A dropped connection under an open session, against the scripted fake: reconnect, `claim`,
/// and what happens to handles and requests when Janus gives the session back or does not.
@Suite struct JanusReconnectTests {
    let log = Logger(label: "test.janus")

    /// The fakes a session's reconnections get, in order; each claim is scripted by the test.
    final class Far: Sendable {
        let first = FakeJanus(autoReply: [.create, .attach, .keepalive, .trickle, .detach, .destroy])
        private let made = Locked<[FakeJanus]>([])
        /// Connection attempts refused before one succeeds (a Janus still restarting).
        let refusals = Locked(0)

        var connector: JanusSession.Connector {
            { () async throws(JanusError) -> any JanusTransport in
                let refuse = self.refusals.withLock { n in
                    defer { n = max(0, n - 1) }
                    return n > 0
                }
                if refuse { throw JanusError.unreachable(url: "fake", reason: "connection refused") }
                let fake = FakeJanus(autoReply: [.attach, .keepalive, .trickle, .detach, .destroy], sessionID: 1001)
                self.made.withLock { $0.append(fake) }
                return fake
            }
        }

        /// The n-th reconnection's fake (0-based), once it exists.
        func reconnection(_ n: Int) async throws -> FakeJanus {
            let deadline = ContinuousClock.now + FakeJanus.requestWait
            while ContinuousClock.now < deadline {
                if let f = made.withLock({ $0.count > n ? $0[n] : nil }) { return f }
                try await Task.sleep(for: .milliseconds(10))
            }
            throw FakeJanusError.noRequest(within: FakeJanus.requestWait)
        }
    }

    func open(_ far: Far, window: Duration = .seconds(5), clock: (any Clock<Duration>)? = nil) async throws -> JanusSession {
        var o = JanusSession.Options(apiSecret: "s3cret")
        if let clock { o.clock = clock }
        o.requestTimeout = .seconds(30)  // replies are scripted: a loaded pool must not time them out
        o.reclaimWindow = window
        o.backoff = Backoff(initial: .milliseconds(20), cap: .milliseconds(200))
        return try await JanusSession.open(over: far.first, url: "fake", options: o, logger: log, reconnect: far.connector)
    }

    /// A counter's value in the process's Prometheus registry (0 before it exists).
    static func scraped(_ name: String) -> Double {
        let text = Telemetry.render(Telemetry.bootstrap())
        let line = text.split(separator: "\n").first { $0.hasPrefix(name + " ") }
        return line.flatMap { Double($0.split(separator: " ")[1]) } ?? 0
    }

    @Test func aDroppedConnectionIsReplacedAndTheSessionClaimed() async throws {
        let reconnectsBefore = Self.scraped("sfubot_janus_reconnects_total")
        let reclaimsBefore = Self.scraped("sfubot_janus_reclaims_total")
        let far = Far()
        let session = try await open(far)
        let handle = try await session.attach(plugin: VideoRoom.plugin)
        far.first.drop()

        let again = try await far.reconnection(0)
        let claim = try await again.nextRequest("claim")
        #expect(claim.sessionID == 1001, "the old session is claimed")
        #expect(claim.json["apisecret"]?.string == "s3cret", "the claim carries the API secret like every request")
        again.reply(to: claim, .success())

        // The handle survived: it hears that the session was claimed, and its next events.
        var events = handle.events.makeAsyncIterator()
        guard case .reclaimed = try #require(await events.next()) else { Issue.record("no .reclaimed"); return }
        again.push(.webrtcUp, to: handle.id)
        guard case .webrtcUp = try #require(await events.next()) else { Issue.record("events after the claim are lost"); return }
        // And requests go out on the new connection.
        let asking = Task { try await handle.message(["request": "listparticipants"]) }
        let message = try await again.nextRequest("message")
        again.reply(to: message, .pluginSuccess(data: ["videoroom": "participants", "participants": []]))
        _ = try await asking.value
        #expect(await session.reclaims == 1)
        #expect(await session.connectionDrops == 1)
        // The same in the metrics (other tests in this process may add theirs meanwhile).
        #expect(Self.scraped("sfubot_janus_reconnects_total") - reconnectsBefore >= 1)
        #expect(Self.scraped("sfubot_janus_reclaims_total") - reclaimsBefore >= 1)
        await session.close()
    }

    @Test func requestsMadeWhileReconnectingWaitForTheClaim() async throws {
        let far = Far()
        far.refusals.withLock { $0 = 3 }  // Janus away for a few attempts
        let session = try await open(far)
        let handle = try await session.attach(plugin: VideoRoom.plugin)
        far.first.drop()
        // Reconnecting (a reconnection was refused): the claim the fake holds keeps it so.
        #expect(await waitUntil { far.refusals.withLock { $0 } < 3 })
        let asking = Task { try await handle.message(["request": "listparticipants"]) }

        let again = try await far.reconnection(0)
        let claim = try await again.nextRequest("claim")
        #expect(again.received.map(\.janus) == ["claim"], "nothing is sent before the claim")
        again.reply(to: claim, .success())
        let message = try await again.nextRequest("message")
        again.reply(to: message, .pluginSuccess(data: ["videoroom": "participants", "participants": []]))
        _ = try await asking.value
        await session.close()
    }

    @Test func aRefusedClaimEndsTheSessionAndItsHandles() async throws {
        let far = Far()
        let session = try await open(far)
        let handle = try await session.attach(plugin: VideoRoom.plugin)
        far.first.drop()
        let again = try await far.reconnection(0)
        let claim = try await again.nextRequest("claim")
        again.reply(to: claim, .error(code: 458, reason: "No such session \(claim.sessionID ?? 0)"))

        for await _ in handle.events {}  // ends: the handle is gone with the session
        await #expect(throws: JanusError.disconnected) { _ = try await session.attach(plugin: VideoRoom.plugin) }
        #expect(await session.reclaims == 0)
        #expect(await session.id == 0)
    }

    /// On a manual clock: the waits between attempts pass only when the test moves time on,
    /// so the window is measured exactly, whatever the machine's load.
    @Test(.timeLimit(.minutes(3))) func reconnectingGivesUpAfterTheWindow() async throws {
        let far = Far(), clock = ManualClock()
        far.refusals.withLock { $0 = 1_000 }  // Janus never comes back
        let session = try await open(far, window: .milliseconds(600), clock: clock)
        let handle = try await session.attach(plugin: VideoRoom.plugin)
        far.first.drop()
        let ended = Task { for await _ in handle.events {}; return clock.now }
        // Two sleepers at rest: the keepalive loop and the reconnection's wait.
        while clock.now.offset < .milliseconds(600) {
            await clock.waitForSleepers(2)
            clock.advance(by: .milliseconds(50))
        }
        let endedAt = await ended.value
        #expect(endedAt.offset >= .milliseconds(600), "gave up at \(endedAt.offset), before the window")
        #expect(far.refusals.withLock { $0 } < 1_000 - 2, "it tried more than once")
        #expect(await session.id == 0)
    }

    @Test(.timeLimit(.minutes(3))) func closingWhileReconnectingEndsAtOnce() async throws {
        let far = Far(), clock = ManualClock()
        far.refusals.withLock { $0 = 1_000 }
        let session = try await open(far, window: .seconds(30), clock: clock)
        let handle = try await session.attach(plugin: VideoRoom.plugin)
        far.first.drop()
        await clock.waitForSleepers(2)  // reconnecting: between two refused attempts
        #expect(far.refusals.withLock { $0 } < 1_000, "it tried to reconnect")
        await session.close()
        for await _ in handle.events {}
        // The manual clock never moved: the handle ended by the close, not by the window.
        #expect(clock.now.offset == .zero)
        #expect(clock.sleepers == 0, "no wait of the closed session is left")
    }

    @Test func withoutAWindowTheSessionEndsWithTheConnection() async throws {
        let far = Far()
        let session = try await open(far, window: .zero)
        let handle = try await session.attach(plugin: VideoRoom.plugin)
        far.first.drop()
        for await _ in handle.events {}
        #expect(await waitUntil { await session.id == 0 })
    }
}
