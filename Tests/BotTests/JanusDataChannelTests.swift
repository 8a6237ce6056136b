@testable import Bot
import Foundation
import GStreamerKit
import Janus
import Logging
import Testing
import TestSupport

/// What Janus 1.1.2's VideoRoom does with data channels, pinned against the real server: the
/// keepalive (docs/architecture.md, "Keepalive data channel") is built on each of these, and a Janus that
/// behaves otherwise should fail here first.
extension MediaScene {
    @Suite struct JanusDataChannelTests {
        let log = Scene.logger

        /// A publisher's channel reaches a subscriber relabelled with the publisher's id, and
        /// nothing goes the other way: the subscriber's pongs, and its pings on a channel of its
        /// own, reach no one, and Janus answers no ping itself. So no pong can ever come back
        /// to a publisher, and nothing a subscriber sends goes anywhere.
        @Test func aPublishersChannelReachesSubscribersOneWayOnly() async throws {
            let room = try await Scene.createRoom()
            // As phones publish: no `data` in `configure`, the channel's m=application is enough.
            let pub = try await DataChannelPeers.publisher(room: room, display: "1:Pub", label: "keepalive", log: log)
            let sub = try await DataChannelPeers.subscriber(room: room, streams: [["feed": .int(pub.feed)]], label: "keepalive", log: log)
            async let fromPublisher: Void = DataChannelPeers.ping(pub.channel, for: 3)
            async let fromSubscriber: Void = DataChannelPeers.ping(sub.channel, for: 3)
            _ = await (fromPublisher, fromSubscriber)
            try await Task.sleep(for: .milliseconds(500))

            #expect(pub.mediaSections == ["m=audio", "m=application"])
            #expect(sub.mediaSections == ["m=audio", "m=application"])
            #expect(sub.streams.contains { $0["type"]?.string == "data" })
            let pings = sub.heard.texts(prefix: "ping:")
            #expect(pings.count >= 10, "3 s of pings every 200 ms: \(pings.count) heard")
            #expect(sub.heard.labels == ["\(pub.feed)"], "relabelled with the publisher's id, not `keepalive`")
            #expect(pub.heard.all.isEmpty, "the publisher heard \(pub.heard.all.count) texts")
            #expect(pub.channel?.readyState == .open && sub.channel?.readyState == .open)
            await sub.close()
            await pub.close()
        }

        /// One m=application carries every publisher's channel, each under its own id; Janus
        /// sends to a subscriber only once that subscriber opened a channel of its own; a
        /// subscription to the data mid alone is possible.
        @Test func subscribersHearDataOnlyWithAChannelOfTheirOwn() async throws {
            let room = try await Scene.createRoom()
            let a = try await DataChannelPeers.publisher(room: room, display: "3:A", label: "keepalive", log: log)
            let b = try await DataChannelPeers.publisher(room: room, display: "4:B", label: "keepalive", log: log)
            let both: [JSON] = [["feed": .int(a.feed)], ["feed": .int(b.feed)]]
            let listening = try await DataChannelPeers.subscriber(room: room, streams: both, label: "any", log: log)
            let silent = try await DataChannelPeers.subscriber(room: room, streams: both, label: nil, log: log)
            let streamsOfA = try await a.feedStreams(room: room, log: log)
            let dataMid = try #require(streamsOfA.first { $0.type == "data" }?.mid)
            let dataOnly = try await DataChannelPeers.subscriber(
                room: room, streams: [["feed": .int(a.feed), "mid": .string(dataMid)]], label: "keepalive", log: log)
            async let fromA: Void = DataChannelPeers.ping(a.channel, for: 3)
            async let fromB: Void = DataChannelPeers.ping(b.channel, for: 3)
            _ = await (fromA, fromB)
            try await Task.sleep(for: .milliseconds(500))

            #expect(listening.mediaSections == ["m=audio", "m=application", "m=audio"])
            #expect(listening.heard.labels == ["\(a.feed)", "\(b.feed)"])
            #expect(listening.heard.texts(prefix: "ping:").count >= 20)
            #expect(silent.heard.all.isEmpty, "a subscriber with no channel of its own heard \(silent.heard.all.count) texts")
            #expect(dataOnly.mediaSections == ["m=application"])
            #expect(dataOnly.heard.labels == ["\(a.feed)"] && dataOnly.heard.all.count >= 10)
            #expect(a.heard.all.isEmpty && b.heard.all.isEmpty, "publishers hear nothing")
            for peer in [dataOnly, silent, listening, a, b] { await peer.close() }
        }

        /// The player opens `keepalive` and pings on it as phones do; a subscriber hears
        /// `ping:<epoch>`. Its pongs never reach the player, which keeps playing: a path that
        /// never answered is not taken as lost.
        @Test func thePlayersPingsReachSubscribersAndUnansweredPingsRestartNothing() async throws {
            let dir = try Scene.tempDirectory("keepalive")
            let tone = try await Audio.tone(440, seconds: 2, in: dir)
            let room = try await Scene.createRoom()
            var config = try Scene.config(room: room, display: "7:Player", protection: .none)
            config.keepaliveInterval = .milliseconds(250)
            let player = Task { [config] in try await Player(config: config, source: .file(tone.path), loop: true, duration: .seconds(6)).run() }
            let feed = try await DataChannelPeers.publisherID(room: room, display: "7:Player", log: log)
            // It answers every ping (as a phone would on its own channel): the pongs go nowhere.
            let sub = try await DataChannelPeers.subscriber(room: room, streams: [["feed": .int(feed)]], label: Keepalive.label, log: log)
            let report = try await player.value
            let pings = sub.heard.texts(prefix: "ping:")
            await sub.close()

            #expect(pings.count >= 8, "\(pings.count) pings heard")
            #expect(sub.heard.labels == ["\(feed)"])
            let now = Date().timeIntervalSince1970
            for ping in pings {
                let epoch = try #require(Double(ping.text.dropFirst(5)), "\(ping.text)")
                #expect(abs(epoch - now) < 30, "\(ping.text) is not the Unix time")
            }
            #expect(report.rejoins == 0, "unanswered pings restarted the player \(report.rejoins) times")
        }
    }
}

extension DataChannelPeers.Peer {
    /// This publisher's streams as the room lists them.
    func feedStreams(room: Int64, log: Logger) async throws -> [RoomPublisher.Stream] {
        let watcher = try await JanusSession.connect(url: Scene.janusURL!, logger: log)
        let handle = try await watcher.attach(plugin: VideoRoom.plugin)
        let listed = try await VideoRoom.joinAsPublisher(handle, room: room, display: "0:Watcher").publishers
        await watcher.close()
        return listed.first { $0.id == feed }?.streams ?? []
    }
}
