import Bot
import FastPath
import FrameCrypto
import Foundation
import GStreamerKit
import Janus
import Logging
import Locking

/// A publisher bot: its own Janus session and webrtcbin; the shared encoder's frames are
/// pushed into its payloaders, sealed on the way in (nothing leaves in the clear).
final class PublisherBot: LoadBot {
    let index: Int
    let display: String
    let context: LoadContext
    /// This bot's own key ring (the run's key with its own ciphers: bots share no lock).
    let protection: FrameProtection
    var keyProtection: FrameProtection { protection }
    let audioStats = FrameStats()
    let videoStats = FrameStats()
    /// The attempt, losses and comebacks (behind one lock; the send paths never take it).
    let core: BotCore<Live>

    /// What one successful (or in-progress) attempt holds.
    struct Live: BotAttempt, @unchecked Sendable {
        // @unchecked: the GStreamer objects are thread-safe references; set once per attempt.
        var session: JanusSession
        var pipeline: Pipeline
        var webrtc: WebRTCBin
        var clock: PhaseClock
        var publisher: Publisher
        var feedID: Int64?
        var outlets: [(Outlet, FanOut)] = []
        /// The frame path's consumers, in the outlets' place once it sends (`sendFrames`).
        var consumers: [(FrameConsumer, FanOut)] = []
        var probes: [PadProbe] = []
        var tasks: [Task<Void, Never>] = []
        /// Audio and video RTP sent past webrtcbin's send chain (`LoadPlan.SendPath.direct`).
        var direct: DirectRTPSender?

        func leave(announce: Bool) async { await publisher.leave(announce: announce) }
    }

    init(index: Int, display: String, context: LoadContext) {
        self.index = index
        self.display = display
        self.context = context
        self.protection = context.protection.forPublisher(index)
        core = BotCore(display: display, log: context.logger(bot: display), rejoinTimeout: context.rejoinTimeout)
    }

    var phases: JoinPhases { core.current?.clock.snapshot ?? core.lastPhases }
    var feedID: Int64? { core.current?.feedID }
    var lost: String? { core.gaveUp }
    var webrtc: WebRTCBin? { core.current?.webrtc }
    /// Janus's keyframe requests and their answers, when video goes the direct path.
    var keyframes: KeyframeCounts? {
        guard context.source.hasVideo, let k = core.current?.direct?.keyframes else { return nil }
        return KeyframeCounts(requests: k.requests, answered: k.answered, sent: k.sent,
                              slowestAnswerMs: Double(k.slowestAnswer / .microseconds(1)) / 1000)
    }

    /// Janus's NACKs and their answers, when video goes the direct path.
    var nacks: NackCounts? {
        guard context.source.hasVideo, let n = core.current?.direct?.nacks else { return nil }
        return NackCounts(nacks: n.messages, requested: n.requested, retransmitted: n.retransmitted, unavailable: n.unavailable)
    }

    /// Connects, joins, publishes and starts sending; returns once Janus reports the media
    /// path up. On failure everything this attempt built is torn down before it throws.
    func join() async throws { try await attempt(reusing: nil) }

    /// One attempt, on a new session or on `kept` (a PeerConnection replaced on a session
    /// that still works). On failure the session is closed too.
    func attempt(reusing kept: JanusSession?) async throws {
        let clock = PhaseClock()
        let log = context.logger(bot: display)
        let session: JanusSession
        if let kept { session = kept } else {
            session = try await JanusSession.connect(url: context.janusURL, options: context.janus, logger: log,
                                                     socketOpened: { clock.mark(.websocket) })
        }
        clock.mark(.session)
        let library = context.library, source = context.source
        let pipeline: Pipeline
        do {
            let description = try library.description(source.hasVideo ? "load-publisher-video" : "load-publisher")
            pipeline = try await OffPool.run { () throws(GStreamerError) in try Pipeline(description: description) }
        } catch {
            await core.retire(session)
            await session.close()
            throw error
        }
        let webrtc: WebRTCBin
        do {
            webrtc = try WebRTCBin(pipeline.element(named: "webrtc"))
            try webrtc.useICE(context.ice)
        } catch {
            await core.retire(session)
            await session.close()
            throw error
        }
        // Janus saying it stopped receiving us for 4 s is a lost path, as for the player.
        let publisher = Publisher(session: session, room: context.room, display: display, mediaLossTimeout: .seconds(4), logger: log)
        try await core.begin(Live(session: session, pipeline: pipeline, webrtc: webrtc, clock: clock, publisher: publisher))
        do throws(any Error) {
            // The run's room watcher checked the room: one round trip less per bot.
            let joined = try await publisher.join(checkRoom: false, attached: { clock.mark(.attached) })
            clock.mark(.joined)
            core.update { $0.feedID = joined.id }

            // Seal on the payloaders' sink pads: nothing reaches a payloader in the clear.
            var probes: [PadProbe] = []
            var outlets: [(Outlet, FanOut)] = []
            let pay = try pipeline.element(named: "pay")
            probes.append(try pay.staticPad("sink").attachSender(protection, AudioFormat.self, stats: audioStats))
            if let caps = source.caps[.audio], let fan = source.fanOut(.audio, for: index) {
                outlets.append((try Outlet(to: pay.staticPad("sink"), caps: caps, streamID: "\(display)-audio", from: fan), fan))
            }
            if source.hasVideo {
                let vpay = try pipeline.element(named: "vpay")
                probes.append(try vpay.staticPad("sink").attachSender(protection, VideoFormat.self, stats: videoStats))
                if let caps = source.caps[.video], let fan = source.fanOut(.video, for: index) {
                    outlets.append((try Outlet(to: vpay.staticPad("sink"), caps: caps, streamID: "\(display)-video", from: fan), fan))
                }
            }
            // Frames flow from now on but are dropped after the payloaders until Janus says the
            // path is up: webrtcbin holds RTP until DTLS is up, which would stall the fan-out
            // thread, and its DTLS handshake does not complete before RTP has reached it.
            var gates: [Gate] = []
            for name in source.hasVideo ? ["pay", "vpay"] : ["pay"] {
                let (gate, probe) = try pipeline.element(named: name).staticPad("src").addGate()
                gates.append(gate)
                probes.append(probe)
            }
            core.update { $0.probes = probes; $0.outlets = outlets }
            for (outlet, fan) in outlets { fan.attach(outlet) }

            let (up, upContinuation) = AsyncStream.makeStream(of: Result<Void, LoadBotError>.self)
            await publisher.follow(webrtc)
            let watch = Task { [weak self] in
                for await event in publisher.events {
                    switch event {
                    case .ice(let s): if s == "connected" || s == "completed" { clock.mark(.iceConnected, at: webrtc.iceConnectedAt) }
                    case .connection(let s): if s == "connected" { clock.mark(.dtlsConnected, at: webrtc.firstReached("connection-state", "connected") ?? Date()) }
                    case .mediaUp: upContinuation.yield(.success(()))
                    case .lost(let why):
                        upContinuation.yield(.failure(LoadBotError(why.description)))
                        if let self { core.lost(why, self) { $0.publisher === publisher } }
                    }
                }
            }
            core.update { $0.tasks = [watch] }
            pipeline.shareClock(with: source.pipeline)
            try await OffPool.run { () throws(GStreamerError) in try pipeline.setState(.playing) }
            // webrtcbin asks to negotiate once RTP caps reach it; then offer/configure/answer.
            try await within(context.joinTimeout, "negotiation and publishing (offer/answer)") { try await publisher.publish(video: source.hasVideo) }
            clock.mark(.negotiated)
            try await within(context.joinTimeout, "media path up (ICE + DTLS)") {
                for await result in up { return try result.get() }
                throw LoadBotError("no media path")
            }
            // DTLS is done: audio may now go out past webrtcbin, before any packet reached it.
            if context.sendPath == .direct {
                do throws(GStreamerError) {
                    // Janus may report the path up before DTLS's key reaches our srtpenc: wait for it.
                    var made = Result { () throws(GStreamerError) in try DirectRTPSender(webrtc) }
                    for _ in 0..<50 {
                        guard case .failure(let e) = made, "\(e)".contains("no DTLS key yet") else { break }
                        try? await Task.sleep(for: .milliseconds(20))
                        made = Result { () throws(GStreamerError) in try DirectRTPSender(webrtc) }
                    }
                    let direct = try made.get()
                    direct.answerNACKs(context.answerNACKs)
                    var sent: [PadProbe] = []
                    if context.framePath, let consumers = sendFrames(direct, pipeline: pipeline, replacing: outlets, log: log) {
                        core.update { $0.consumers = consumers }
                    } else {
                        sent.append(try direct.attach(to: pay.staticPad("src")))
                        // Sealed once per frame on vpay's sink; each packet protected and sent here.
                        if source.hasVideo { sent.append(try direct.attachVideo(to: pipeline.element(named: "vpay").staticPad("src"))) }
                    }
                    let reports = direct.watchReports(webrtc)
                    core.update { $0.direct = direct; $0.probes += sent + (reports.map { [$0] } ?? []) }
                } catch {
                    context.directFallbacks.increment()
                    log.warning("load: \(display) sends through webrtcbin: \(error)")
                }
            }
            for gate in gates { gate.open() }
            clock.mark(.firstRTP)
            core.finished()
        } catch {
            await core.tearDownCurrent(self, keepSession: false)
            throw LoadBotError(error)
        }
    }

    /// Stops sending: the fan-out no longer feeds this attempt.
    func stopping(_ l: Live) {
        for (outlet, fan) in l.outlets { fan.detach(outlet) }
        for (consumer, fan) in l.consumers { fan.detach(consumer) }
    }

    func stopped(_ l: Live) { l.probes.forEach { $0.remove() } }

    /// Stops coming back, leaves and tears down; safe to call more than once.
    func leave() async { await core.leave(self) }

    /// Losses and comebacks so far.
    var comeback: Comeback { get async { await core.snapshot(current: core.current?.session) } }

    /// Sent counters and what Janus reports back (RTCP RR): packets, bytes, RTT, loss; the
    /// selected candidate pair, and what the direct path handed to libnice (relayed).
    func networkStats() async -> PublisherStats {
        guard let webrtc, let read = try? await webrtc.rtpStatsAndPairs() else { return PublisherStats() }
        let (stats, pairs) = read
        let out = stats.filter { $0.kind == .outbound }
        let remote = stats.filter { $0.kind == .remoteInbound }
        // The direct path's packets never reach webrtcbin's counters.
        let sender = core.current?.direct
        let direct = sender?.counts ?? (packets: 0, payloadBytes: 0, dropped: 0)
        let reports = sender?.reports ?? (count: 0, cumulativeLost: 0, jitter: 0)
        let packets = out.reduce(direct.packets) { $0 + $1.packets }
        let rtts = remote.compactMap(\.roundTripTime).filter { $0 > 0 }
        // Sent directly, Janus's reports about it are read by the sender, not by webrtcbin.
        let lost = remote.reduce(max(0, reports.cumulativeLost)) { $0 + max(0, $1.packetsLost) }
        let reported = !remote.isEmpty || reports.count > 0
        return PublisherStats(packets: packets, bytes: out.reduce(direct.payloadBytes) { $0 + $1.bytes },
                              rttMs: rtts.isEmpty ? nil : 1000 * rtts.reduce(0, +) / Double(rtts.count),
                              lossPercent: packets > 0 && reported ? 100 * Double(lost) / Double(packets) : nil,
                              pair: pairs.first, throughAgent: sender?.sentThroughAgent)
    }
}

/// One statistics read of a publisher bot.
struct PublisherStats: Sendable {
    var packets: UInt64 = 0
    var bytes: UInt64 = 0
    /// From RTCP (webrtcbin's sender reports and Janus's receiver reports): the direct send
    /// path sends no sender report, so it has none.
    var rttMs: Double?
    var lossPercent: Double?
    var pair: CandidatePair?
    /// Direct path only: packets sent through libnice's agent.
    var throughAgent: UInt64?
}
