@testable import Bot
import Foundation
import GStreamerKit
import Janus
import Logging
import Synchronization
import Testing
import TestSupport
import Locking

/// Bare peers for pinning what Janus's VideoRoom does with data channels: a publisher of
/// silence with an optional data channel, and a subscriber that hears every channel.
enum DataChannelPeers {
    /// Text heard on data channels, by channel label, in arrival order.
    final class Heard: Sendable {
        private let texts = Locked<[(label: String, text: String)]>([])
        func add(_ label: String, _ text: String) { texts.withLock { $0.append((label, text)) } }
        var all: [(label: String, text: String)] { texts.withLock { $0 } }
        func texts(prefix: String) -> [(label: String, text: String)] { all.filter { $0.text.hasPrefix(prefix) } }
        var labels: Set<String> { Set(all.map(\.label)) }
    }

    /// Reads a channel's texts into `heard`; answers `ping:X` with `pong:X` on the same channel
    /// when `answering`.
    static func hear(_ channel: DataChannel, into heard: Heard, answering: Bool) -> Task<Void, Never> {
        Task {
            for await event in channel.events {
                guard case .text(let text) = event else { continue }
                heard.add(channel.label, text)
                if answering, text.hasPrefix("ping:") { try? channel.send(text: "pong:" + text.dropFirst(5)) }
            }
        }
    }

    struct Peer {
        let session: JanusSession
        let handle: JanusHandle
        let pipeline: Pipeline
        let webrtc: WebRTCBin
        let feed: Int64
        /// Our own channel, if we opened one.
        let channel: DataChannel?
        let heard: Heard
        let tasks: [Task<Void, Never>]
        /// What Janus's answer/offer held, `m=` lines only.
        let mediaSections: [String]
        /// The streams the subscription reported (subscribers only).
        let streams: [JSON]

        func close() async {
            tasks.forEach { $0.cancel() }
            await session.close()
            pipeline.setStateQuietly(.null)
        }
    }

    static func mediaSections(_ sdp: String) -> [String] {
        sdp.split(whereSeparator: \.isNewline).filter { $0.hasPrefix("m=") }.map { String($0.split(separator: " ").first ?? "") }
    }

    /// Joins `room` and publishes silence; with `label` it opens that channel before the offer.
    /// `configure` is sent as given plus the offer (phones send audio/video/videocodec only).
    static func publisher(room: Int64, display: String, label: String?, configure: [String: JSON] = ["audio": true, "video": false],
                          log: Logger) async throws -> Peer {
        let session = try await JanusSession.connect(url: Scene.janusURL!, logger: log)
        let handle = try await session.attach(plugin: VideoRoom.plugin)
        let joined = try await VideoRoom.joinAsPublisher(handle, room: room, display: display)
        let pipeline = try Pipeline(description: """
            audiotestsrc is-live=true wave=silence ! opusenc ! rtpopuspay pt=111
              ! application/x-rtp,media=audio,encoding-name=OPUS,clock-rate=48000,payload=111
              ! webrtcbin name=webrtc bundle-policy=max-bundle
            """)
        let webrtc = try WebRTCBin(pipeline.element(named: "webrtc"))
        let heard = Heard()
        var tasks: [Task<Void, Never>] = []
        webrtc.onDataChannel { channel in _ = hear(channel, into: heard, answering: false) }
        let (events, linkTasks) = PeerLink(webrtc: webrtc, handle: handle, logger: log).follow()
        tasks += linkTasks
        try pipeline.setState(.playing)
        var channel: DataChannel?
        if let label {
            let c = try webrtc.createDataChannel(label)
            channel = c
            tasks.append(hear(c, into: heard, answering: true))
        }
        for await event in events { if case .negotiationNeeded = event { break } }
        let offer = try await webrtc.createOffer()
        try await webrtc.setLocalDescription(offer)
        var body = configure
        body["request"] = "configure"
        let reply = try await handle.message(.object(body), jsep: JSEP(type: "offer", sdp: offer.sdp))
        let answer = try #require(reply.jsep)
        try await webrtc.setRemoteDescription(SessionDescription(kind: .answer, sdp: answer.sdp))
        // Janus offers a feed to subscribers only once its PeerConnection is up.
        for await event in events { if case .mediaUp = event { break } }
        return Peer(session: session, handle: handle, pipeline: pipeline, webrtc: webrtc, feed: joined.id, channel: channel,
                    heard: heard, tasks: tasks, mediaSections: mediaSections(answer.sdp), streams: [])
    }

    /// A multistream subscriber to `streams` (`[{feed}]` or `[{feed, mid}]`); with `label` it
    /// opens a channel of its own, as ECall phones do on their subscriber PeerConnection.
    /// It answers `ping:X` with `pong:X` on any channel it hears.
    static func subscriber(room: Int64, streams: [JSON], label: String?, log: Logger) async throws -> Peer {
        let session = try await JanusSession.connect(url: Scene.janusURL!, logger: log)
        let handle = try await session.attach(plugin: VideoRoom.plugin)
        let pipeline = try Pipeline(description: "webrtcbin name=webrtc bundle-policy=max-bundle")
        let webrtc = try WebRTCBin(pipeline.element(named: "webrtc"))
        let heard = Heard()
        webrtc.onDataChannel { channel in _ = hear(channel, into: heard, answering: true) }
        webrtc.onIncomingPad { incoming in
            guard let sink = try? pipeline.addElement(description: "fakesink sync=false async=false", name: "sink\(UUID().uuidString.prefix(8))"),
                  let pad = try? sink.staticPad("sink") else { return }
            sink.syncStateWithParent()
            try? incoming.pad.link(to: pad)
        }
        var (_, tasks) = PeerLink(webrtc: webrtc, handle: handle, logger: log).follow()
        try pipeline.setState(.playing)
        var channel: DataChannel?
        if let label {
            let c = try webrtc.createDataChannel(label)
            channel = c
            tasks.append(hear(c, into: heard, answering: true))
        }
        let reply = try await handle.message([
            "request": "join", "ptype": "subscriber", "room": .int(room), "use_msid": true, "streams": .array(streams),
        ])
        let offer = try #require(reply.jsep)
        try await PeerLink(webrtc: webrtc, handle: handle, logger: log).answer(offer)
        // Janus sends to this subscriber once its own channel is open: wait for that.
        let end = ContinuousClock.now + .seconds(10)
        while let channel, channel.readyState != .open, ContinuousClock.now < end { try await Task.sleep(for: .milliseconds(50)) }
        return Peer(session: session, handle: handle, pipeline: pipeline, webrtc: webrtc, feed: 0, channel: channel, heard: heard,
                    tasks: tasks, mediaSections: mediaSections(offer.sdp), streams: reply.data["streams"]?.array ?? [])
    }

    /// The id of the publisher shown as `display` once it has published (`listparticipants`).
    static func publisherID(room: Int64, display: String, within seconds: Double = 20, log: Logger) async throws -> Int64 {
        let session = try await JanusSession.connect(url: Scene.janusURL!, logger: log)
        let handle = try await session.attach(plugin: VideoRoom.plugin)
        let end = ContinuousClock.now + .seconds(seconds)
        var id: Int64?
        while id == nil, ContinuousClock.now < end {
            let list = (try? await handle.message(["request": "listparticipants", "room": .int(room)]))?.data["participants"]?.array ?? []
            id = list.first { $0["display"]?.string == display && $0["publisher"]?.bool == true }?["id"]?.int
            if id == nil { try? await Task.sleep(for: .milliseconds(100)) }
        }
        await session.close()
        guard let id else { throw PipelineRunError(message: "\(display) did not publish within \(seconds) s") }
        return id
    }

    /// Sends `ping:<epoch>` on `channel` every `interval` until `seconds` have passed.
    static func ping(_ channel: DataChannel?, every interval: Duration = .milliseconds(200), for seconds: Double) async {
        let end = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < end {
            if let channel, channel.readyState == .open {
                try? channel.send(text: "ping:\(Int(Date().timeIntervalSince1970))")
            }
            try? await Task.sleep(for: interval)
        }
    }
}
