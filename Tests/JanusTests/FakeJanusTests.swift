@testable import Janus
import JanusTesting
import Logging
import Testing

/// JanusSession against the scripted fake: no network, every reply when the test says.
@Suite struct FakeJanusTests {
    let log = Logger(label: "test.janus")

    @Test func sessionTalksToTheFake() async throws {
        let fake = FakeJanus(autoReply: .lifecycle)
        let session = try await JanusSession.open(over: fake, url: "fake", logger: log)
        #expect(await session.id == fake.sessionID)
        let handle = try await session.attach(plugin: VideoRoom.plugin)
        #expect(fake.attachedHandles == [handle.id])

        // A plugin message waits for the test's answer (ack first, then the event, as Janus does).
        async let joined = VideoRoom.joinAsPublisher(handle, room: 42, display: "7:Test")
        let join = try await fake.nextRequest("message")
        #expect(join.handleID == handle.id && join.request == "join" && join.body?["room"]?.int == 42)
        fake.reply(to: join, .ack)
        fake.reply(to: join, .event(data: ["videoroom": "joined", "room": 42, "id": 99, "publishers": []]))
        #expect(try await joined.id == 99)

        // Unsolicited events reach the handle's stream.
        fake.push(.publishers(room: 42, [FakeJanus.publisher(id: 5, display: "5:Alice")]), to: handle.id)
        var events = handle.events.makeAsyncIterator()
        guard case .plugin(let data, _)? = await events.next(), case .publishers(let list) = VideoRoomEvent(data: data, jsep: nil) else {
            Issue.record("no publishers event"); return
        }
        #expect(list.map(\.id) == [5] && list[0].displayName == "Alice")

        await session.close()
        #expect(fake.isClosed)
        // Keepalives may come between, on a slow machine: the requests that matter, in order.
        #expect(fake.received.map(\.janus).filter { $0 != "keepalive" } == ["create", "attach", "message", "destroy"])
        #expect(await events.next() == nil, "the handle's events end with the session")
    }

    @Test func waitingForARequestFailsInsteadOfHanging() async throws {
        let fake = FakeJanus(autoReply: .lifecycle)
        let session = try await JanusSession.open(over: fake, url: "fake", logger: log)
        await #expect(throws: FakeJanusError.noRequest(within: .milliseconds(50))) { _ = try await fake.nextRequest(timeout: .milliseconds(50)) }
        let handle = try await session.attach(plugin: VideoRoom.plugin)
        let leaving = Task { await VideoRoom.leave(handle) }
        await #expect(throws: FakeJanusError.unexpected(expected: "attach", got: "message")) { _ = try await fake.nextRequest("attach") }
        await session.close()
        await leaving.value
        await #expect(throws: FakeJanusError.closed) { _ = try await fake.nextRequest() }
    }
}
