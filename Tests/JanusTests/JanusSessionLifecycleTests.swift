@testable import Janus
import JanusTesting
import Logging
import Testing

/// The session's lifecycle against the scripted fake: each test forces one interleaving of
/// replies, close(), Janus's timeout and a lost connection, with no network.
/// Requests never time out within the suite's time limit: whatever fails here failed at once,
/// not by a timeout, so a loaded pool (CI's TSan run) cannot turn a slow reply into a failure.
@Suite(.timeLimit(.minutes(3))) struct JanusSessionLifecycleTests {
    let log = Logger(label: "test.janus")

    var options: JanusSession.Options {
        var o = JanusSession.Options(apiSecret: "s3cret")
        o.requestTimeout = .seconds(3600)
        return o
    }

    func open(_ fake: FakeJanus) async throws -> JanusSession {
        try await JanusSession.open(over: fake, url: "fake", options: options, logger: log)
    }

    /// Race: an attach whose reply arrives after close() began must not register a handle
    /// (its event stream would never finish) and must say the session is gone.
    @Test func attachReplyArrivingWhileClosingThrowsDisconnected() async throws {
        let fake = FakeJanus(autoReply: .create)
        // No timeout: the race is with close(), and a test starved for 2 s on a loaded pool saw
        // the attach time out first (CI).
        let session = try await open(fake)
        let attaching = Task { try await session.attach(plugin: VideoRoom.plugin) }
        let attach = try await fake.nextRequest("attach")  // held back
        let closing = Task { await session.close() }
        let destroy = try await fake.nextRequest("destroy")  // close() has begun
        fake.acceptAttach(attach)

        await #expect(throws: JanusError.disconnected) { _ = try await attaching.value }
        fake.reply(to: destroy, .success())
        await closing.value
        #expect(await session.openHandleCount == 0, "no handle stream is left open")
        #expect(fake.isClosed)
    }

    /// Race: nothing but `destroy` goes out once close() has begun.
    @Test func noRequestIsSentOnAClosingSession() async throws {
        let fake = FakeJanus(autoReply: [.create, .attach])
        let session = try await open(fake)
        let handle = try await session.attach(plugin: VideoRoom.plugin)
        let closing = Task { await session.close() }
        let destroy = try await fake.nextRequest("destroy")

        await #expect(throws: JanusError.disconnected) { _ = try await session.attach(plugin: VideoRoom.plugin) }
        await #expect(throws: JanusError.disconnected) { _ = try await handle.message(["request": "leave"]) }
        await #expect(throws: JanusError.disconnected) { try await handle.trickleCompleted() }
        #expect(fake.received.map(\.janus) == ["create", "attach", "destroy"], "requests were sent on a closing session")

        fake.reply(to: destroy, .success())
        await closing.value
    }

    @Test func requestsAfterCloseFailAtOnce() async throws {
        let fake = FakeJanus(autoReply: .lifecycle)
        let session = try await open(fake)
        let handle = try await session.attach(plugin: VideoRoom.plugin)
        await session.close()
        #expect(await session.id == 0)

        await #expect(throws: JanusError.disconnected) { _ = try await session.attach(plugin: VideoRoom.plugin) }
        await #expect(throws: JanusError.disconnected) { _ = try await handle.message(["request": "leave"]) }
        await handle.detach()
        #expect(fake.received.map(\.janus) == ["create", "attach", "destroy"])
        await session.close()  // again: returns at once
    }

    @Test func concurrentClosesAllReturnAfterTheTransportClosed() async throws {
        let fake = FakeJanus(autoReply: .create)
        let session = try await open(fake)
        let first = Task { await session.close() }
        let destroy = try await fake.nextRequest("destroy")
        let second = Task { await session.close(); return fake.isClosed }
        fake.reply(to: destroy, .success())
        await first.value
        #expect(await second.value, "the second close() waited for the transport")
        #expect(fake.received.map(\.janus) == ["create", "destroy"], "one destroy only")
    }

    @Test func janusTimeoutClosesTheSessionAndEndsHandleStreams() async throws {
        let fake = FakeJanus(autoReply: .lifecycle)
        let session = try await open(fake)
        let handle = try await session.attach(plugin: VideoRoom.plugin)
        let pending = Task { try await handle.message(["request": "configure"]) }
        _ = try await fake.nextRequest("message")

        fake.pushTimeout()
        for await _ in handle.events {}  // ends
        #expect(await session.openHandleCount == 0)
        await #expect(throws: JanusError.disconnected) { _ = try await pending.value }
        #expect(await fake.waitUntilClosed(timeout: .seconds(1)), "the session closed its transport")
        await #expect(throws: JanusError.disconnected) { _ = try await session.attach(plugin: VideoRoom.plugin) }
        await session.close()
        #expect(!fake.received.contains { $0.janus == "destroy" }, "Janus already dropped the session")
    }

    @Test func pendingRequestsFailWhenTheConnectionDrops() async throws {
        let fake = FakeJanus(autoReply: .lifecycle)
        let session = try await open(fake)
        let handle = try await session.attach(plugin: VideoRoom.plugin)
        let pending = Task { try await handle.message(["request": "join"]) }
        _ = try await fake.nextRequest("message")

        fake.drop()
        // Failed by the drop: its timeout is an hour away.
        await #expect(throws: JanusError.disconnected) { _ = try await pending.value }
        for await _ in handle.events {}
        await session.close()
    }

    @Test func lostConnectionWhileCreatingFailsOpen() async throws {
        let fake = FakeJanus()
        let o = options, log = log
        let opening = Task { try await JanusSession.open(over: fake, url: "fake", options: o, logger: log) }
        let create = try await fake.nextRequest("create")
        #expect(create.json["apisecret"] == "s3cret" && create.sessionID == nil)
        fake.drop()
        await #expect(throws: JanusError.disconnected) { _ = try await opening.value }
    }

    @Test func unansweredRequestTimesOutAndTheSessionStaysOpen() async throws {
        let fake = FakeJanus(autoReply: .lifecycle)
        var o = options
        o.requestTimeout = .milliseconds(200)
        let session = try await JanusSession.open(over: fake, url: "fake", options: o, logger: log)
        let handle = try await session.attach(plugin: VideoRoom.plugin)
        await #expect(throws: JanusError.timeout(request: "message")) { _ = try await handle.message(["request": "join"]) }
        _ = try await session.attach(plugin: VideoRoom.plugin)
        await session.close()
    }

    @Test func errorsAreClassified() async throws {
        let fake = FakeJanus(autoReply: .create)
        let session = try await open(fake)
        let refused = Task { try await session.attach(plugin: "janus.plugin.nope") }
        fake.reply(to: try await fake.nextRequest("attach"), .error(code: 460, reason: "No such plugin"))
        await #expect { _ = try await refused.value } throws: { ($0 as? JanusError)?.janusCode == 460 }

        fake.autoReply = .lifecycle
        let handle = try await session.attach(plugin: VideoRoom.plugin)
        let joining = Task { try await VideoRoom.joinAsPublisher(handle, room: 9, display: "1:x") }
        fake.reply(to: try await fake.nextRequest("message"), .pluginError(code: 426, reason: "No such room (9)"))
        await #expect(throws: JanusError.plugin(code: 426, reason: "No such room (9)")) { _ = try await joining.value }
        await session.close()

        let lost = JanusError.disconnected
        #expect(lost.isConnectionProblem && lost.janusCode == nil && lost.pluginCode == nil)
        #expect(JanusError.timeout(request: "x").isConnectionProblem)
        #expect(JanusError.unreachable(url: "ws://h", reason: "refused").isUnreachable)
        #expect(!JanusError.plugin(code: 426, reason: "").isConnectionProblem)
        #expect(JanusError.plugin(code: 426, reason: "r").pluginCode == 426)
        #expect(JanusError.janus(code: 403, reason: "Unauthorized").description.contains("--api-secret"))
        #expect(JanusError.protocolViolation("a") != .protocolViolation("b"))
    }

    /// On a manual clock: a keepalive goes out when the interval has passed, none before, and
    /// the loop is gone after close (nothing left sleeping to send one).
    @Test func keepalivesCarryTheSessionAndStopAtClose() async throws {
        let fake = FakeJanus(autoReply: [.create, .destroy]), clock = ManualClock()
        var o = options
        o.keepaliveInterval = .seconds(25)
        o.clock = clock
        let session = try await JanusSession.open(over: fake, url: "fake", options: o, logger: log)
        await clock.waitForSleepers()
        #expect(!fake.received.contains { $0.janus == "keepalive" }, "none before the interval")
        clock.advance(by: .seconds(25))
        let keepalive = try await fake.nextRequest("keepalive")
        #expect(keepalive.sessionID == fake.sessionID)
        fake.reply(to: keepalive, .ack)
        await clock.waitForSleepers()  // the next interval
        await session.close()
        #expect(clock.sleepers == 0, "the keepalive loop stopped at close")
        clock.advance(by: .seconds(100))
        #expect(fake.received.last?.janus == "destroy", "no keepalive after close")
    }
}
