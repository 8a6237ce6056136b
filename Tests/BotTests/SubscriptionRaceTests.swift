import Foundation
import GStreamerKit
import Janus
import JanusTesting
import Logging
import Synchronization
import Testing
@testable import Bot
import TestSupport

/// A subscription change whose reply arrives after `leave()` (issue 26, part 3), against a
/// scripted Janus that holds the reply until the test has left: Janus's offer must not be
/// answered on a PeerConnection being taken down (the recorder's `dropPeer`, a load bot's
/// teardown). `addNow`/`removeNow` used to negotiate it anyway.
@Suite struct SubscriptionRaceTests {
    let room: Int64 = 1234

    @Test func feedsAddedAsTheSubscriptionLeavesAreNotNegotiated() async throws {
        try await changeAnsweredAfterLeave("subscribe") { try await $0.add([3]) }
    }

    @Test func feedsRemovedAsTheSubscriptionLeavesAreNotNegotiated() async throws {
        try await changeAnsweredAfterLeave("unsubscribe") { try await $0.remove([2]) }
    }

    /// Joins feeds 1 and 2, asks for `change`, leaves while Janus holds its reply, then lets
    /// Janus answer with a new offer.
    func changeAnsweredAfterLeave(_ request: String, _ change: @escaping @Sendable (Subscription) async throws -> Void) async throws {
        let fake = FakeJanus(autoReply: .lifecycle)
        let session = try await JanusSession.open(over: fake, url: "fake://janus", logger: Scene.logger)
        let pipeline = try Pipeline(description: "webrtcbin name=webrtc bundle-policy=max-bundle")
        let webrtc = try WebRTCBin(pipeline.element(named: "webrtc"))
        try pipeline.setState(.playing)
        defer { pipeline.setStateQuietly(.null) }
        let negotiations = ComeBackTests.Counter()
        let subscription = Subscription(session: session, room: room, privateID: 5, webrtc: webrtc, logger: Scene.logger,
                                        hooks: .init(streams: { _ in negotiations.increment() }))

        let joining = Task { try await subscription.add([1, 2]) }
        let join = try await fake.nextRequest("message")
        #expect(join.request == "join")
        fake.reply(to: join, .event(data: ["videoroom": "attached", "room": .int(room), "streams": [RecorderRaceTests.stream(mid: "0", feed: 1)]],
                                    jsep: JSEP(type: "offer", sdp: RecorderRaceTests.offer)))
        let start = try await fake.nextRequest("message")
        #expect(start.request == "start")
        fake.reply(to: start, .event(data: ["videoroom": "event", "started": "ok"]))
        try await joining.value
        #expect(negotiations.value == 1)

        let changing = Task { try await change(subscription) }
        let held = try await fake.nextRequest("message")
        #expect(held.request == request)
        await subscription.leave(announce: false)
        #expect(await subscription.state == .left)
        // Janus answers with a new offer (version 2) only now; any `start` sent for it is answered too.
        let janus = Task {
            while let r = try? await fake.nextRequest(timeout: .seconds(3600)) {
                if r.request == "start" { fake.reply(to: r, .event(data: ["videoroom": "event", "started": "ok"])) }
            }
        }
        defer { janus.cancel() }
        let offer = RecorderRaceTests.offer.replacingOccurrences(of: "o=- 1700000000 1 ", with: "o=- 1700000000 2 ")
        fake.reply(to: held, .event(data: ["videoroom": "updated", "room": .int(room), "streams": [RecorderRaceTests.stream(mid: "0", feed: 1)]],
                                    jsep: JSEP(type: "offer", sdp: offer)))
        _ = try? await changing.value

        #expect(negotiations.value == 1, "no negotiation after leave")
        #expect(fake.received.filter { $0.request == "start" }.count == 1, "no answer sent after leave")
        await session.close()
    }
}
