import Foundation
import FrameCrypto
import Janus
import JanusTesting
import Logging
import Testing
@testable import Bot
import TestSupport

/// The recorder's join against a scripted Janus (no network): the interleavings that broke it.
@Suite struct RecorderRaceTests {
    let room: Int64 = 1234

    /// A publisher who joins while the recorder's first subscription is still being set up
    /// (its `attach` reply held back) must become an update of that subscription. The recorder
    /// used to answer the event with a second pipeline and a second subscriber handle.
    @Test func publisherJoiningDuringTheFirstSubscriptionIsAddedToIt() async throws {
        let fake = FakeJanus(autoReply: [.create, .keepalive, .trickle, .detach, .destroy])
        let session = try await JanusSession.open(over: fake, url: "fake://janus", logger: Scene.logger)
        let dir = try Scene.tempDirectory("race")
        defer { try? FileManager.default.removeItem(at: dir) }
        let config = BotConfig(janusURL: "fake://janus", room: room, display: "9:Rec", protection: .e2ee(KeyRing(current: .random())),
                               pipelines: try PipelineLibrary(), logger: Scene.logger)
        let recording = RoomRecording(config: config, directory: dir, mixFile: nil, connect: { _ in session })
        let starting = Task { try await recording.start() }

        // The recorder hears the room through a publisher handle; publisher 1 is there.
        let rosterHandle = fake.acceptAttach(try await fake.nextRequest("attach"))
        let exists = try await fake.nextRequest("message")
        #expect(exists.request == "exists")
        fake.reply(to: exists, .pluginSuccess(data: ["videoroom": "success", "room": .int(room), "exists": true]))
        let join = try await fake.nextRequest("message")
        #expect(join.request == "join" && join.body?["ptype"]?.string == "publisher")
        fake.reply(to: join, .event(data: [
            "videoroom": "joined", "room": .int(room), "id": 77, "private_id": 5,
            "publishers": [FakeJanus.publisher(id: 1, display: "1:Ann")],
        ]))

        // Its subscriber handle is being attached: hold the reply, and let publisher 2 join now.
        let subscriberAttach = try await fake.nextRequest("attach")
        fake.push(.publishers(room: room, [FakeJanus.publisher(id: 2, display: "2:Bob")]), to: rosterHandle)
        await #expect(throws: FakeJanusError.self, "no second subscription is started while the first is being set up") {
            let r = try await fake.nextRequest(timeout: .milliseconds(700))
            Issue.record("unexpected \(r.janus) \(r.request ?? "")")
        }
        fake.acceptAttach(subscriberAttach)

        // The first subscription: publisher 1 only.
        let subscribe = try await fake.nextRequest("message")
        #expect(subscribe.request == "join" && subscribe.body?["ptype"]?.string == "subscriber")
        #expect(subscribe.body?["streams"]?.array?.compactMap { $0["feed"]?.int } == [1])
        #expect(subscribe.body?["private_id"]?.int == 5)
        fake.reply(to: subscribe, .event(data: ["videoroom": "attached", "room": .int(room), "streams": [Self.stream(mid: "0", feed: 1)]],
                                         jsep: JSEP(type: "offer", sdp: Self.offer)))
        let start = try await fake.nextRequest("message")
        #expect(start.request == "start" && start.jsep?.type == "answer")
        fake.reply(to: start, .event(data: ["videoroom": "event", "started": "ok"]))
        try await starting.value

        // Publisher 2 is added to the same subscription, on the same handle.
        let update = try await fake.nextRequest("message")
        #expect(update.request == "subscribe")
        #expect(update.handleID == subscribe.handleID)
        #expect(update.body?["streams"]?.array?.compactMap { $0["feed"]?.int } == [2])
        fake.reply(to: update, .event(data: ["videoroom": "updated", "room": .int(room), "streams": [Self.stream(mid: "0", feed: 1)]]))
        #expect(fake.received.filter { $0.janus == "attach" }.count == 2, "one handle to hear the room, one subscription")

        let finishing = Task { await recording.finish() }
        let leave = try await fake.nextRequest("message")
        #expect(leave.request == "leave")
        fake.reply(to: leave, .event(data: ["videoroom": "event", "leaving": "ok"]))
        _ = await finishing.value
        await session.close()
    }

    static func stream(mid: String, feed: Int64) -> JSON {
        ["type": "audio", "active": true, "mindex": 0, "mid": .string(mid), "feed_id": .int(feed), "feed_display": "1:Ann", "codec": "opus"]
    }

    /// A Janus-shaped subscriber offer: one Opus stream, bundled, trickle ICE, DTLS.
    static let offer = [
        "v=0", "o=- 1700000000 1 IN IP4 127.0.0.1", "s=VideoRoom 1234", "t=0 0",
        "a=group:BUNDLE 0", "a=ice-options:trickle", "a=msid-semantic: WMS janus",
        "a=fingerprint:sha-256 " + (0..<32).map { _ in "AB" }.joined(separator: ":"),
        "m=audio 9 UDP/TLS/RTP/SAVPF 111", "c=IN IP4 127.0.0.1", "a=sendonly", "a=mid:0", "a=rtcp-mux",
        "a=ice-ufrag:fake", "a=ice-pwd:fakefakefakefakefakefake", "a=setup:actpass",
        "a=rtpmap:111 opus/48000/2", "a=fmtp:111 useinbandfec=1", "a=msid:janus janusa0",
        "a=ssrc:424242 cname:janus", "",
    ].joined(separator: "\r\n")
}
