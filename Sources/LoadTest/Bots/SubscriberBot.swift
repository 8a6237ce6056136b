import Bot
import FastPath
import FrameCrypto
import Foundation
import GStreamerKit
import Janus
import Logging
import Synchronization
import Locking

/// A subscriber bot: one multistream subscription (one webrtcbin) to every publisher, or to
/// `--subscribe-limit` of them; each stream is depayloaded, every frame opened and counted.
final class SubscriberBot: LoadBot {
    let index: Int
    let display: String
    private let context: LoadContext
    /// This bot's own key ring (the run's key with its own ciphers: bots share no lock).
    private let protection: FrameProtection
    var keyProtection: FrameProtection { protection }
    /// The attempt, losses and comebacks (behind one lock; the receive paths never take it).
    let core: BotCore<Live>
    /// Streams by mid, shared with webrtcbin's pad-added thread.
    let streams: Streams
    /// Frames of streams that ended (publisher left, or a new attempt).
    private let retired = Locked(FrameStats.Snapshot.zero)
    /// Their decrypted audio frames by feed (for the steady window's per-feed counts).
    private let retiredAudioByFeed = Locked<[Int64: Int]>([:])
    struct Live: BotAttempt, @unchecked Sendable {
        // @unchecked: GStreamer objects are thread-safe references; set once per attempt.
        var session: JanusSession
        var subscription: Subscription
        var pipeline: Pipeline
        var webrtc: WebRTCBin
        var clock: PhaseClock
        var tasks: [Task<Void, Never>] = []
        /// Packets past webrtcbin's receive queue (`LoadPlan.ReceivePath.direct`).
        var receiveInline: ReceiveInline?

        func leave(announce: Bool) async { await subscription.leave(announce: announce) }
    }

    init(index: Int, display: String, context: LoadContext) {
        self.index = index
        self.display = display
        self.context = context
        self.protection = context.protection.forOneBot()
        streams = Streams(decodes: context.decodeEvery.map { index % $0 == 0 } ?? false)
        core = BotCore(display: display, log: context.logger(bot: display), rejoinTimeout: context.rejoinTimeout)
    }

    var phases: JoinPhases {
        guard let clock = core.current?.clock else { return core.lastPhases }
        if let first = firstDecrypted { clock.mark(.firstDecrypted, at: first) }
        return clock.snapshot
    }
    var lost: String? { core.gaveUp }

    /// Waits for publishers, subscribes, answers and returns once ICE is connected; frames
    /// and later feeds are handled by its tasks until `leave`.
    func join() async throws { try await attempt(reusing: nil) }

    /// One attempt, on a new session or on `kept` (a PeerConnection replaced on a session
    /// that still works). On failure the session is closed too.
    func attempt(reusing kept: JanusSession?) async throws {
        let log = context.logger(bot: display)
        // The attempt's clock starts once there is something to subscribe to.
        var feeds: [Int64] = []
        while feeds.isEmpty {
            feeds = feedSelection(publishers: await context.watcher.current.map(\.id), have: [], index: index, limit: context.subscribeLimit)
            if feeds.isEmpty { try await Task.sleep(for: .milliseconds(200)) }
        }
        let clock = PhaseClock()
        let session: JanusSession
        if let kept { session = kept } else {
            session = try await JanusSession.connect(url: context.janusURL, options: context.janus, logger: log,
                                                     socketOpened: { clock.mark(.websocket) })
        }
        clock.mark(.session)
        let pipeline: Pipeline, webrtc: WebRTCBin
        do {
            // Parsing makes a webrtcbin (and its threads): off the pool, as every state change.
            let description = try context.library.description("load-subscriber")
            pipeline = try await OffPool.run { () throws(GStreamerError) in try Pipeline(description: description) }
            webrtc = try WebRTCBin(pipeline.element(named: "webrtc"))
            try webrtc.useICE(context.ice)
            if context.plainReceive { try webrtc.withoutJitterBuffers() }
        } catch {
            await core.retire(session)
            await session.close()
            throw LoadBotError(error)
        }
        let subscription = Subscription(
            session: session, room: context.room, privateID: nil, webrtc: webrtc, logger: log,
            hooks: .init(streams: { [weak self] list in
                clock.mark(.joined)
                self?.learn(list)
            }, negotiated: { clock.mark(.negotiated) }, attached: { clock.mark(.attached) }))
        try await core.begin(Live(session: session, subscription: subscription, pipeline: pipeline, webrtc: webrtc, clock: clock))
        do throws(any Error) {
            let protection = self.protection, library = context.library, streams = self.streams
            let direct = context.receivePath == .direct
            webrtc.onIncomingPad { incoming in
                guard let mid = incoming.mid else { return }
                Self.attach(incoming.pad, mid: mid, streams: streams, pipeline: pipeline, library: library, protection: protection,
                            consumingAudioRTP: direct, clock: clock, log: log)
            }
            try await OffPool.run { () throws(GStreamerError) in try pipeline.setState(.playing) }
            let (connected, connectedContinuation) = AsyncStream.makeStream(of: Result<Void, LoadBotError>.self)
            let watch = Task { [weak self] in
                for await event in subscription.events {
                    switch event {
                    case .ice(let s):
                        guard s == "connected" || s == "completed" else { break }
                        clock.mark(.iceConnected, at: webrtc.iceConnectedAt)
                        connectedContinuation.yield(.success(()))
                    case .connection(let s):
                        if s == "connected" { clock.mark(.dtlsConnected, at: webrtc.firstReached("connection-state", "connected") ?? Date()) }
                    case .lost(let why):
                        connectedContinuation.yield(.failure(LoadBotError(why.description)))
                        if let self { core.lost(why, self) { $0.subscription === subscription } }
                    }
                }
            }
            core.update { $0.tasks = [watch] }
            try await subscription.add(feeds)
            // The transport exists once Janus's offer is set: from now on webrtcbin's hold
            // decides which packets take the queue (before ICE is connected, all of them).
            if direct {
                do {
                    let shortcut = try ReceiveInline(webrtc)
                    core.update { $0.receiveInline = shortcut }
                } catch {
                    log.warning("subscriber: \(error); received packets take webrtcbin's queue")
                }
            }
            try await within(context.joinTimeout, "ICE") {
                for await result in connected { return try result.get() }
                throw LoadBotError("no ICE connection")
            }
            let follow = Task { [weak self] in
                while !Task.isCancelled {
                    try? await Task.sleep(for: .seconds(1))
                    do { try await self?.addNewFeeds(subscription) } catch {
                        // webrtcbin 1.22 cannot take every renegotiation Janus offers (a mid
                        // reused with another direction, after a publisher came back under a
                        // new id): a new PeerConnection subscribes to everyone at once.
                        log.warning("subscriber: could not add feeds: \(error); subscribing again on a new PeerConnection")
                        if let self { core.startComeback(self, cause: "could not add feeds: \(error)", keepSession: true, if: { _ in true }) }
                        return
                    }
                }
            }
            core.update { $0.tasks.append(follow) }
            core.finished()
        } catch {
            await core.tearDownCurrent(self, keepSession: false)
            throw LoadBotError(error)
        }
    }

    /// Back means a frame decrypted again (or ICE up, if no publisher sends within 10 s).
    var progress: Int { frames.opened }

    func confirmBack(after before: Int) async {
        let ice = ContinuousClock.now
        while frames.opened <= before, ContinuousClock.now - ice < .seconds(10), !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Losses and comebacks so far.
    var comeback: Comeback { get async { await core.snapshot(current: core.current?.session) } }

    /// Feeds of the current streams.
    var feedIDs: Set<Int64> { streams.withLock { Set($0.values.map(\.feedID)) } }

    /// Which mid carries which feed (before each answer): a mid Janus gave to another feed
    /// starts a new stream; the old one's counts are kept.
    private func learn(_ list: [SubscribedStream]) {
        streams.withLock { m in
            for s in list {
                guard let feed = s.feedID, s.active, s.type == "audio" || s.type == "video" else { continue }
                if let old = m[s.mid], old.feedID == feed { continue }
                if let old = m[s.mid] { retire(old) }
                let stream = Stream(mid: s.mid, feedID: feed, kind: s.type, display: s.feedDisplay ?? "")
                m[s.mid] = stream
                // A mid that had a branch gets no new pad: open the new feed's frames there.
                streams.branches[s.mid]?.open(stream, protection)
            }
        }
    }

    private func retire(_ s: Stream) {
        s.removeProbes()
        let snapshot = s.stats.snapshot
        retired.withLock { $0 = $0 + snapshot }
        if s.kind == "audio" { retiredAudioByFeed.withLock { $0[s.feedID, default: 0] += snapshot.opened } }
    }

    /// Subscribes to publishers that appeared since (up to the limit).
    private func addNewFeeds(_ subscription: Subscription) async throws {
        let publishers = await context.watcher.current.map(\.id)
        let have = Set(streams.withLock { $0.values.map(\.feedID) })
        let add = feedSelection(publishers: publishers, have: have, index: index, limit: context.subscribeLimit)
        guard !add.isEmpty else { return }
        try await subscription.add(add)
    }

    /// Links a new webrtcbin pad to a receive branch that opens every frame (pad-added thread).
    /// `consumingAudioRTP`: audio frames are opened on the pad itself, the branch only sinks events.
    private static func attach(_ pad: Pad, mid: String, streams: Streams, pipeline: Pipeline, library: PipelineLibrary,
                               protection: FrameProtection, consumingAudioRTP: Bool, clock: PhaseClock, log: Logger) {
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
                let consuming = consumingAudioRTP && stream.kind == "audio"
                let name = consuming ? "discard" : stream.kind == "video" ? (streams.decodes ? "load-receive-video-decode" : "load-receive-video") : "load-receive-audio"
                let bin = try pipeline.addBin(description: library.description(name), name: "receive-\(mid)")
                let branch = Branch(bin: bin, pad: consuming ? pad : try bin.element(named: "open").staticPad("src"), consumingRTP: consuming)
                // Before the opener: one that consumes on this pad drops every packet, and
                // probes added after it never see one.
                pad.onFirstBuffer { rtp in
                    clock.mark(.firstRTP)
                    if rtp.count >= 12 { stream.ssrc = UInt32(rtp[8]) << 24 | UInt32(rtp[9]) << 16 | UInt32(rtp[10]) << 8 | UInt32(rtp[11]) }
                }
                branch.open(stream, protection)
                _ = bin.syncStateWithParent()
                try pad.link(to: bin.staticPad("sink"))
                streams.branches[mid] = branch
            } catch {
                log.error("subscriber: cannot receive stream \(mid): \(error)")
            }
        }
    }

    /// Decrypted audio frames by feed (compared with the audio frames publishers send).
    var framesByFeed: [Int64: Int] {
        streams.withLock { m in
            m.values.filter { $0.kind == "audio" }.reduce(into: retiredAudioByFeed.withLock { $0 }) { $0[$1.feedID, default: 0] += $1.stats.snapshot.opened }
        }
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

    /// Per received stream: packets, bytes, lost, jitter (s) from webrtcbin; and the selected
    /// candidate pair.
    func networkStats() async -> (streams: [RTPStreamStats], pair: CandidatePair?) {
        guard let webrtc = core.current?.webrtc, let read = try? await webrtc.rtpStatsAndPairs() else { return ([], nil) }
        return (read.streams.filter { $0.kind == .inbound }, read.pairs.first)
    }

    /// Stops coming back, leaves and tears down; safe to call more than once.
    func leave() async { await core.leave(self) }

    /// Stops following: the phases keep the first decrypted frame, the run the inline counts.
    func stopping(_ l: Live) {
        if let first = firstDecrypted { l.clock.mark(.firstDecrypted, at: first) }
        if let counts = l.receiveInline?.counts {
            context.receivedPastQueue.add(Int(counts.inline))
            context.receivedThroughQueue.add(Int(counts.queued))
        }
    }

    /// The streams' counts go to the retired totals.
    func stopped(_ l: Live) {
        streams.withLock { m in
            for s in m.values { retire(s) }
            m.removeAll()
            streams.branches.removeAll()
        }
    }
}
