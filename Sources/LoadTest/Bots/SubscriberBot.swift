import Bot
import FrameCrypto
import Foundation
import GStreamerKit
import Janus
import Logging
import Synchronization

/// A subscriber bot: one multistream subscription (one webrtcbin) to every publisher, or to
/// `--subscribe-limit` of them; each stream is depayloaded, every frame opened and counted.
final class SubscriberBot: Sendable {
    let index: Int
    let display: String
    private let context: LoadContext
    /// This bot's own key ring (the run's key with its own ciphers: bots share no lock).
    private let protection: FrameProtection
    private let live = Mutex<Live?>(nil)
    private let lostReason = Mutex<String?>(nil)
    private let lastPhases = Mutex(JoinPhases())
    /// Streams by mid, shared with webrtcbin's pad-added thread.
    private let streams = Streams()
    /// Frames of streams that ended (publisher left, or a new attempt).
    private let retired = Mutex(FrameStats.Snapshot.zero)

    private struct Live: @unchecked Sendable {
        // @unchecked: GStreamer objects are thread-safe references; set once per attempt.
        var session: JanusSession
        var subscription: Subscription
        var pipeline: Pipeline
        var webrtc: WebRTCBin
        var clock: PhaseClock
        var tasks: [Task<Void, Never>] = []
    }

    final class Streams: Sendable {
        private let map = Mutex<[String: Stream]>([:])
        func withLock<R>(_ body: (inout [String: Stream]) -> R) -> R { map.withLock { body(&$0) } }
    }

    /// One subscribed stream: which feed, and what came of its frames.
    final class Stream: @unchecked Sendable {
        // @unchecked: set before webrtcbin adds the pad; `branch`/`probe`/`ssrc` under `streams`' lock.
        let mid: String
        let feedID: Int64
        let kind: String
        let stats = FrameStats()
        let times = FrameTimes()
        var ssrc: UInt32?
        var branch: Bin?
        var probe: PadProbe?
        init(mid: String, feedID: Int64, kind: String) {
            self.mid = mid
            self.feedID = feedID
            self.kind = kind
        }
    }

    init(index: Int, display: String, context: LoadContext) {
        self.index = index
        self.display = display
        self.context = context
        self.protection = context.protection.forOneBot()
    }

    var phases: JoinPhases {
        guard let clock = live.withLock({ $0?.clock }) else { return lastPhases.withLock { $0 } }
        if let first = firstDecrypted { clock.mark(.firstDecrypted, at: first) }
        return clock.snapshot
    }
    var lost: String? { lostReason.withLock { $0 } }

    /// Waits for publishers, subscribes, answers and returns once ICE is connected; frames
    /// and later feeds are handled by its tasks until `leave`.
    func join() async throws {
        let log = context.logger(bot: display)
        // The attempt's clock starts once there is something to subscribe to.
        var feeds: [Int64] = []
        while feeds.isEmpty {
            feeds = feedSelection(publishers: await context.watcher.current.map(\.id), have: [], index: index, limit: context.subscribeLimit)
            if feeds.isEmpty { try await Task.sleep(for: .milliseconds(200)) }
        }
        let clock = PhaseClock()
        let session = try await JanusSession.connect(url: context.janusURL, options: context.janus, logger: log)
        clock.mark(.socketOpen)
        let pipeline: Pipeline, webrtc: WebRTCBin
        do {
            pipeline = try Pipeline(description: context.library.description("load-subscriber"))
            webrtc = try WebRTCBin(pipeline.element(named: "webrtc"))
            if context.plainReceive { try webrtc.withoutJitterBuffers() }
        } catch {
            await session.close()
            throw LoadBotError(error)
        }
        let subscription = Subscription(
            session: session, room: context.room, privateID: nil, webrtc: webrtc, logger: log,
            hooks: .init(streams: { [weak self] list in
                clock.mark(.joined)
                self?.learn(list)
            }))
        live.withLock { $0 = Live(session: session, subscription: subscription, pipeline: pipeline, webrtc: webrtc, clock: clock) }
        lostReason.withLock { $0 = nil }
        do throws(any Error) {
            let protection = self.protection, library = context.library, streams = self.streams
            webrtc.onIncomingPad { incoming in
                guard let mid = incoming.mid else { return }
                Self.attach(incoming.pad, mid: mid, streams: streams, pipeline: pipeline, library: library, protection: protection, clock: clock, log: log)
            }
            try pipeline.setState(.playing)
            let (connected, connectedContinuation) = AsyncStream.makeStream(of: Result<Void, LoadBotError>.self)
            let watch = Task { [weak self] in
                for await event in subscription.events {
                    switch event {
                    case .ice(let s):
                        guard s == "connected" || s == "completed" else { break }
                        clock.mark(.iceConnected)
                        connectedContinuation.yield(.success(()))
                    case .lost(let why):
                        connectedContinuation.yield(.failure(LoadBotError(why.description)))
                        self?.markLost(why.description)
                    }
                }
            }
            live.withLock { $0?.tasks = [watch] }
            try await subscription.add(feeds)
            try await within(context.joinTimeout, "ICE") {
                for await result in connected { return try result.get() }
                throw LoadBotError("no ICE connection")
            }
            let follow = Task { [weak self] in
                while !Task.isCancelled {
                    try? await Task.sleep(for: .seconds(1))
                    do { try await self?.addNewFeeds(subscription) } catch {
                        log.warning("subscriber: could not add feeds: \(error)")
                    }
                }
            }
            live.withLock { $0?.tasks.append(follow) }
        } catch {
            await leave()
            throw LoadBotError(error)
        }
    }

    private func markLost(_ reason: String) { lostReason.withLock { if $0 == nil { $0 = reason } } }

    /// Which mid carries which feed (before each answer): a mid Janus gave to another feed
    /// starts a new stream; the old one's counts are kept.
    private func learn(_ list: [SubscribedStream]) {
        streams.withLock { m in
            for s in list {
                guard let feed = s.feedID, s.active, s.type == "audio" || s.type == "video" else { continue }
                if let old = m[s.mid], old.feedID == feed { continue }
                if let old = m[s.mid] { retire(old) }
                m[s.mid] = Stream(mid: s.mid, feedID: feed, kind: s.type)
            }
        }
    }

    private func retire(_ s: Stream) {
        s.probe?.remove()
        let snapshot = s.stats.snapshot
        retired.withLock { $0 = $0 + snapshot }
    }

    /// Subscribes to publishers that appeared since (up to the limit).
    private func addNewFeeds(_ subscription: Subscription) async throws {
        let have = Set(streams.withLock { $0.values.map(\.feedID) })
        let add = feedSelection(publishers: await context.watcher.current.map(\.id), have: have, index: index, limit: context.subscribeLimit)
        guard !add.isEmpty else { return }
        try await subscription.add(add)
    }

    /// Links a new webrtcbin pad to a receive branch that opens every frame (pad-added thread).
    private static func attach(_ pad: Pad, mid: String, streams: Streams, pipeline: Pipeline, library: PipelineLibrary,
                               protection: FrameProtection, clock: PhaseClock, log: Logger) {
        streams.withLock { m in
            guard let stream = m[mid], stream.branch == nil else {
                // Not a feed we know (yet): discard so the pad does not stall the session.
                if let bin = try? pipeline.addBin(description: library.description("discard"), name: "discard-\(mid)") {
                    _ = bin.syncStateWithParent()
                    try? pad.link(to: bin.staticPad("sink"))
                }
                return
            }
            do {
                let bin = try pipeline.addBin(description: library.description(stream.kind == "video" ? "load-receive-video" : "load-receive-audio"), name: "receive-\(mid)")
                let open = try bin.element(named: "open").staticPad("src")
                stream.probe = stream.kind == "video"
                    ? open.attachReceiver(protection, VideoFormat.self, stats: stream.stats, times: stream.times)
                    : open.attachReceiver(protection, AudioFormat.self, stats: stream.stats, times: stream.times)
                pad.onFirstBuffer { rtp in
                    clock.mark(.firstRTP)
                    if rtp.count >= 12 { stream.ssrc = UInt32(rtp[8]) << 24 | UInt32(rtp[9]) << 16 | UInt32(rtp[10]) << 8 | UInt32(rtp[11]) }
                }
                _ = bin.syncStateWithParent()
                try pad.link(to: bin.staticPad("sink"))
                stream.branch = bin
            } catch {
                log.error("subscriber: cannot receive stream \(mid): \(error)")
            }
        }
    }

    /// Decrypted audio frames by feed (compared with the audio frames publishers send).
    var framesByFeed: [Int64: Int] {
        streams.withLock { m in m.values.filter { $0.kind == "audio" }.reduce(into: [:]) { $0[$1.feedID, default: 0] += $1.stats.snapshot.opened } }
    }

    /// Video access units decrypted on the current streams.
    var videoFramesOpened: Int {
        streams.withLock { m in m.values.filter { $0.kind == "video" }.reduce(0) { $0 + $1.stats.snapshot.opened } }
    }

    var frames: FrameStats.Snapshot {
        streams.withLock { m in m.values.reduce(retired.withLock { $0 }) { $0 + $1.stats.snapshot } }
    }

    /// Feeds subscribed, those that delivered a decrypted frame, and those that delivered any.
    var feedCount: (subscribed: Int, receiving: Int, arriving: Int) {
        streams.withLock { m in
            let feeds = Set(m.values.map(\.feedID))
            let receiving = Set(m.values.filter { $0.stats.snapshot.opened > 0 }.map(\.feedID))
            let arriving = Set(m.values.filter { $0.stats.snapshot.received > 0 }.map(\.feedID))
            return (feeds.count, receiving.count, arriving.count)
        }
    }

    /// When the first frame opened, for the join phases.
    var firstDecrypted: Date? { streams.withLock { m in m.values.compactMap(\.times.firstDate).min() } }

    /// Per received stream: packets, bytes, lost, jitter (s) from webrtcbin.
    func networkStats() async -> [RTPStreamStats] {
        guard let webrtc = live.withLock({ $0?.webrtc }), let stats = try? await webrtc.rtpStats() else { return [] }
        return stats.filter { $0.kind == .inbound }
    }

    func leave() async {
        guard let l = live.withLock({ current -> Live? in defer { current = nil }; return current }) else { return }
        if let first = firstDecrypted { l.clock.mark(.firstDecrypted, at: first) }
        for t in l.tasks { t.cancel() }
        await l.subscription.leave()
        await l.session.close()
        l.pipeline.setStateQuietly(.null)
        streams.withLock { m in
            for s in m.values { retire(s) }
            m.removeAll()
        }
        lastPhases.withLock { $0 = l.clock.snapshot }
    }
}
