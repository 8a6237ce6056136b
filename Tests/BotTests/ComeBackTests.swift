import Foundation
import FrameCrypto
import Janus
import JanusTesting
import Logging
import Synchronization
import Testing
@testable import Bot
import TestSupport
import Locking

/// Coming back against a Janus that stops answering (issue 24 B), scripted (no network): the
/// recorder is back only once it is subscribed again, and a session that does not answer is
/// left for a new one.
@Suite struct ComeBackTests {
    let room: Int64 = 1234

    @Test func aSessionThatDoesNotAnswerIsLeftForANewOneAndTheGapLastsUntilSubscribed() async throws {
        var options = JanusSession.Options()
        // What makes the held attach time out; 0.5 s also timed out the joins below on CI's
        // loaded pool (the session closed before the test answered them).
        options.requestTimeout = .seconds(3)
        let old = FakeJanus(autoReply: [.create, .keepalive, .trickle, .detach, .destroy], sessionID: 1001)
        let new = FakeJanus(autoReply: [.create, .keepalive, .trickle, .detach, .destroy], sessionID: 2002)
        let first = try await JanusSession.open(over: old, url: "fake://janus", options: options, logger: Scene.logger)
        let connects = Counter()
        let dir = try Scene.tempDirectory("comeback")
        defer { try? FileManager.default.removeItem(at: dir) }
        let config = BotConfig(janusURL: "fake://janus", room: room, display: "9:Rec", protection: .e2ee(KeyRing(current: .random())),
                               pipelines: try PipelineLibrary(), logger: Scene.logger)
        let recording = RoomRecording(config: config, directory: dir, mixFile: nil, connect: { [options] _ throws(BotError) in
            connects.increment()
            guard connects.value > 1 else { return first }
            do throws(JanusError) { return try await JanusSession.open(over: new, url: "fake://janus", options: options, logger: Scene.logger) } catch { throw .janus(error) }
        })
        let starting = Task { try await recording.start() }
        try await joinRoom(old)
        try await subscribe(old)
        try await starting.value

        // The media path is lost; Janus (still connected) answers nothing from now on.
        await recording.startRejoin("test: media lost", rejoinSession: false)
        let held = try await old.nextRequest("attach")
        #expect(await recording.state == RoomRecording.State.rejoining)
        // Held past its timeout: the rejoin moved on to a new session (which answers only when
        // told below), the recorder is not back, and its gap is still open.
        #expect(await eventually(within: 30) { connects.value == 2 }, "no new session after the held attach")
        let state = await recording.state, openGap = await recording.gaps.last?.end == nil
        #expect(state == .rejoining && openGap, "not back while Janus does not answer")
        _ = held

        // A new session: the room again, and the subscription on it.
        try await joinRoom(new)
        let answered = Date()
        try await subscribe(new)
        #expect(await eventually(within: 30) { await recording.state == RoomRecording.State.recording }, "not back after subscribing again")
        let gap = try #require(await recording.gaps.last)
        #expect(gap.end.map { $0 >= answered } == true, "the gap ends once subscribed on the new session: \(gap)")
        let counters = await recording.counters
        #expect(counters.rejoins == 1 && counters.mediaRestarts == 0, "\(counters)")
        #expect(connects.value == 2)

        let finishing = Task { await recording.finish() }
        let leave = try await new.nextRequest("message")
        new.reply(to: leave, .event(data: ["videoroom": "event", "leaving": "ok"]))
        _ = await finishing.value
        await first.close()
    }

    /// The roster's attach, `exists` and publisher `join` (publisher 1 in the room).
    func joinRoom(_ fake: FakeJanus) async throws {
        _ = fake.acceptAttach(try await fake.nextRequest("attach"))
        let exists = try await fake.nextRequest("message")
        fake.reply(to: exists, .pluginSuccess(data: ["videoroom": "success", "room": .int(room), "exists": true]))
        let join = try await fake.nextRequest("message")
        fake.reply(to: join, .event(data: [
            "videoroom": "joined", "room": .int(room), "id": 77, "private_id": 5,
            "publishers": [FakeJanus.publisher(id: 1, display: "1:Ann")],
        ]))
    }

    /// The subscriber handle, its `join` with a one-feed offer and the `start` that follows.
    func subscribe(_ fake: FakeJanus) async throws {
        _ = fake.acceptAttach(try await fake.nextRequest("attach"))
        let subscribe = try await fake.nextRequest("message")
        #expect(subscribe.request == "join" && subscribe.body?["streams"]?.array?.compactMap { $0["feed"]?.int } == [1])
        fake.reply(to: subscribe, .event(data: ["videoroom": "attached", "room": .int(room), "streams": [RecorderRaceTests.stream(mid: "0", feed: 1)]],
                                         jsep: JSEP(type: "offer", sdp: RecorderRaceTests.offer)))
        let start = try await fake.nextRequest("message")
        #expect(start.request == "start" && start.jsep?.type == "answer")
        fake.reply(to: start, .event(data: ["videoroom": "event", "started": "ok"]))
    }

    final class Counter: Sendable {
        private let count = Locked(0)
        func increment() { count.withLock { $0 += 1 } }
        var value: Int { count.withLock { $0 } }
    }
}
