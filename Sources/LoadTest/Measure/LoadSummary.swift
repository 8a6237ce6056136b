public import Foundation

/// `summary.json`: whether the room held, and the figures behind it, derived from a
/// `LoadResult` (one shard's or merged).
public struct LoadSummary: Codable, Sendable {
    public var room: Int64
    public var janus: String
    public var e2ee: Bool
    public var video: Bool
    public var shards: Int
    public var interrupted: Bool
    public var started: Date
    public var ended: Date
    public var held: Bool
    /// Why the room did not hold (empty when it did).
    public var problems: [String]
    public var bots: Bots
    /// Seconds from a bot's (successful) attempt start to each phase, by phase name.
    public var joinSeconds: [String: Distribution]
    /// By role (`publisher`, `subscriber`) and phase (`JoinPhases.names`): when the phase was
    /// reached and how long it took by itself, over each bot's successful attempt.
    public var joinPhases: [String: [String: PhaseTimes]]
    public var publishers: Publishers
    public var subscribers: Subscribers
    public var steady: Steady?
    public var process: [Process]
    /// How bots came back from losses (chaos or not), over all bots.
    public var comebacks: Comebacks
    /// Per fault kind injected with `--chaos`; nil without it.
    public var chaos: [String: ChaosKind]?
    /// Selected candidate pairs: the share relayed through TURN, and the RTT it added.
    public var ice: ICEPaths?
    /// E-model assumptions, stated with every MOS.
    public var mosModel = "ITU-T G.107 E-model: Opus Ie=0, Bpl=20 (assumed; G.113 has no Opus values), codec delay 26.5 ms, one-way delay = publishers' median RTT to Janus, jitter buffer = 2 x jitter"

    public struct Bots: Codable, Sendable {
        public var plannedPublishers: Int
        public var plannedSubscribers: Int
        public var joined: Int
        public var failed: Int
        public var lost: Int
        public var notStarted: Int
        /// Join attempts beyond each bot's first.
        public var retries: Int
    }

    public struct Distribution: Codable, Sendable, Equatable {
        public var n: Int
        public var min: Double
        public var p5: Double
        public var p50: Double
        public var p95: Double
        public var p99: Double
        public var max: Double
        public var mean: Double

        public init?(_ values: [Double]) {
            guard !values.isEmpty else { return nil }
            let v = values.sorted()
            func q(_ p: Double) -> Double { v[Swift.min(v.count - 1, Int((p * Double(v.count - 1)).rounded()))] }
            n = v.count
            min = v[0]
            p5 = q(0.05)
            p50 = q(0.5)
            p95 = q(0.95)
            p99 = q(0.99)
            max = v[v.count - 1]
            mean = v.reduce(0, +) / Double(v.count)
        }
    }

    /// One join phase over many bots, seconds.
    public struct PhaseTimes: Codable, Sendable, Equatable {
        /// From the attempt's start to the phase.
        public var at: Distribution?
        /// From the phase before it to the phase.
        public var took: Distribution?
    }

    public struct Publishers: Codable, Sendable {
        public var framesSealed: Int
        public var sealFailures: Int
        public var packetsSent: UInt64
        public var rttMs: Distribution?
        /// Loss Janus reports for what publishers sent (RTCP RR), %.
        public var remoteLossPercent: Distribution?
        public var keyframes: KeyframeCounts?
        public var nacks: NackCounts?
    }

    public struct Subscribers: Codable, Sendable {
        /// Feeds subscribed over all subscribers, and those that delivered decrypted frames.
        public var feedsSubscribed: Int
        public var feedsReceiving: Int
        /// Subscribers that received every publisher they should (all, or the limit).
        public var receivingEveryFeed: Int
        public var framesReceived: Int
        public var framesOpened: Int
        public var decryptFailures: [String: Int]
        public var decryptFailuresTotal: Int
        /// In the steady window where there was one (else over the run).
        public var packetsReceived: UInt64
        public var packetsLost: Int64
        public var lossPercent: Double?
        public var jitterMs: Distribution?
        public var mos: Distribution?
    }

    /// The window in which every bot had joined or given up.
    public struct Steady: Codable, Sendable {
        public var seconds: Double
        /// Decrypted frames a subscriber got from a feed over the frames that publisher sent
        /// in the window, over every (subscriber, feed) pair; ≈ 1 on a healthy loopback.
        public var receivedOverSent: Distribution?
        public var mbpsOut: Double?
        public var mbpsIn: Double?
    }

    public struct Comebacks: Codable, Sendable {
        public var connectionDrops: Int
        public var claims: Int
        public var rejoins: Int
        public var mediaRestarts: Int
        public var gapSeconds: Double
        /// Seconds from each loss to media again (first decrypted frame / `webrtcup`).
        public var seconds: Distribution?
        /// Bots that lost Janus or their media path and did not come back, with why.
        public var notBack: [String: String]
    }

    /// One kind of chaos fault: how many, how fast the room came back, who did not.
    public struct ChaosKind: Codable, Sendable {
        /// Per minute (per bot for ws-drop and ice-restart).
        public var rate: Double
        public var count: Int
        public var recovered: Int
        /// Seconds from fault to the first good decrypted frame on the affected bot(s).
        public var seconds: Distribution?
        /// Faults not recovered: "bot at t s: why".
        public var notRecovered: [String]
    }

    /// One process: what the bots cost.
    public struct Process: Codable, Sendable {
        public var shard: Int
        public var host: String
        public var bots: Int
        public var fanOutGroups: Int
        /// How publishers sent audio, and attempts that fell back from direct to webrtcbin.
        public var sendPath: String?
        public var directFallbacks: Int?
        /// How subscribers took packets in, and packets past and through the receive queue.
        public var receivePath: String?
        public var receivedPastQueue: Int?
        public var receivedThroughQueue: Int?
        public var cpuCores: Double?
        public var peakRSSMB: Double
        /// (peak RSS − RSS before the bots) / bots.
        public var rssPerBotMB: Double?
        public var threadsPerBot: Double?
        /// Process CPU time over the RTP packets sent and received in the steady window.
        public var cpuMicrosecondsPerPacket: Double?
        /// The kernel's part of `cpuMicrosecondsPerPacket` (UDP send, and on loopback the delivery to Janus).
        public var kernelMicrosecondsPerPacket: Double?
        public var packetsSent: UInt64?
        public var packetsReceived: UInt64?
    }
}

extension LoadSummary {
    public init(_ r: LoadResult) {
        let pubs = r.bots.filter { $0.role == .publisher }, subs = r.bots.filter { $0.role == .subscriber }
        room = r.room
        janus = r.janus
        e2ee = r.e2ee
        video = r.video
        shards = r.shards.count
        interrupted = r.shards.contains { $0.interrupted }
        started = r.shards.map(\.started).min() ?? Date()
        ended = r.shards.map(\.ended).max() ?? Date()
        bots = Bots(plannedPublishers: r.publishers, plannedSubscribers: r.subscribers,
                    joined: r.bots.filter { $0.state == .joined }.count, failed: r.bots.filter { $0.state == .failed }.count,
                    lost: r.bots.filter { $0.state == .lost }.count, notStarted: r.bots.filter { $0.state == .notStarted }.count,
                    retries: r.bots.reduce(0) { $0 + max(0, $1.attempts - 1) })
        var join: [String: Distribution] = [:]
        for (i, name) in JoinPhases.names.enumerated() {
            join[name] = Distribution(r.bots.compactMap { $0.phases.values[i] })
        }
        join["first_keyframe"] = Distribution(subs.compactMap(\.firstKeyframeSeconds))
        joinSeconds = join
        var byRole: [String: [String: PhaseTimes]] = [:]
        for (role, bots) in [("publisher", pubs), ("subscriber", subs)] where !bots.isEmpty {
            var phases: [String: PhaseTimes] = [:]
            for (i, name) in JoinPhases.names.enumerated() {
                let times = PhaseTimes(at: Distribution(bots.compactMap { $0.phases.values[i] }),
                                       took: Distribution(bots.compactMap { $0.phases.steps[i] }))
                if times.at != nil { phases[name] = times }
            }
            byRole[role] = phases
        }
        joinPhases = byRole
        publishers = Publishers(framesSealed: pubs.reduce(0) { $0 + $1.framesSealed }, sealFailures: pubs.reduce(0) { $0 + $1.sealFailures },
                                packetsSent: pubs.reduce(0) { $0 + $1.packetsSent },
                                rttMs: Distribution(pubs.compactMap(\.rttMs)), remoteLossPercent: Distribution(pubs.compactMap(\.remoteLossPercent)),
                                keyframes: KeyframeCounts.total(pubs.compactMap(\.keyframes)), nacks: NackCounts.total(pubs.compactMap(\.nacks)))
        // A subscriber should receive every joined publisher, or `limit` of them.
        let joinedPublishers = pubs.filter { $0.state == .joined }.count
        let expected = min(joinedPublishers, r.subscribeLimit ?? Int.max)
        var failures: [String: Int] = [:]
        for s in subs { failures.merge(s.decryptFailures, uniquingKeysWith: +) }
        let received = subs.reduce(UInt64(0)) { $0 + ($1.steadyPacketsReceived ?? $1.packetsReceived) }
        let lost = subs.reduce(Int64(0)) { $0 + max(0, $1.steadyPacketsLost ?? $1.packetsLost) }
        subscribers = Subscribers(
            feedsSubscribed: subs.reduce(0) { $0 + $1.feeds }, feedsReceiving: subs.reduce(0) { $0 + $1.feedsReceiving },
            receivingEveryFeed: subs.filter { $0.state == .joined && $0.feedsReceiving >= expected }.count,
            framesReceived: subs.reduce(0) { $0 + $1.framesReceived }, framesOpened: subs.reduce(0) { $0 + $1.framesOpened },
            decryptFailures: failures.filter { $0.value > 0 }, decryptFailuresTotal: failures.values.reduce(0, +),
            packetsReceived: received, packetsLost: lost,
            lossPercent: received > 0 ? 100 * Double(max(0, lost)) / (Double(received) + Double(max(0, lost))) : nil,
            jitterMs: Distribution(subs.compactMap(\.jitterMs)), mos: Distribution(subs.compactMap(\.mos)))

        let sentByFeed = Dictionary(pubs.compactMap { p in p.feedID.flatMap { id in p.steadyFramesSent.map { (String(id), $0) } } }, uniquingKeysWith: +)
        var ratios: [Double] = []
        for s in subs {
            for (feed, n) in s.steadyFramesByFeed ?? [:] {
                if let sent = sentByFeed[feed], sent > 0 { ratios.append(Double(n) / Double(sent)) }
            }
        }
        let windows = r.shards.compactMap { s in s.steadyStart.flatMap { a in s.steadyEnd.map { $0.timeIntervalSince(a) } } }
        if !windows.isEmpty {
            let inWindow = r.shards.flatMap { s in s.timeline.filter { t in
                guard let a = s.steadyStart, let b = s.steadyEnd else { return false }
                let at = s.started.addingTimeInterval(t.t)
                return at >= a && at <= b
            } }
            steady = Steady(seconds: windows.min() ?? 0, receivedOverSent: Distribution(ratios),
                            mbpsOut: inWindow.isEmpty ? nil : inWindow.map(\.mbpsOut).reduce(0, +) / Double(inWindow.count) * Double(r.shards.count),
                            mbpsIn: inWindow.isEmpty ? nil : inWindow.map(\.mbpsIn).reduce(0, +) / Double(inWindow.count) * Double(r.shards.count))
        }
        process = r.shards.map { s in
            let n = r.bots.filter { $0.shard == s.index }.count
            let window = s.steadyStart.flatMap { a in s.steadyEnd.map { $0.timeIntervalSince(a) } }
            let packets = (s.steadyPacketsSent ?? 0) + (s.steadyPacketsReceived ?? 0)
            return Process(
                shard: s.index, host: s.host, bots: n, fanOutGroups: s.fanOutGroups,
                sendPath: s.sendPath, directFallbacks: s.directFallbacks,
                receivePath: s.receivePath, receivedPastQueue: s.receivedPastQueue, receivedThroughQueue: s.receivedThroughQueue,
                cpuCores: s.steadyCPUSeconds.flatMap { c in window.map { c / max($0, 0.001) } },
                peakRSSMB: Double(s.peakRSSBytes) / 1_048_576,
                rssPerBotMB: n > 0 ? Double(s.peakRSSBytes - s.baselineRSSBytes) / 1_048_576 / Double(n) : nil,
                threadsPerBot: n > 0 ? Double(s.peakThreads - s.baselineThreads) / Double(n) : nil,
                cpuMicrosecondsPerPacket: packets > 0 ? s.steadyCPUSeconds.map { $0 * 1e6 / Double(packets) } : nil,
                kernelMicrosecondsPerPacket: packets > 0 ? s.steadyKernelCPUSeconds.map { $0 * 1e6 / Double(packets) } : nil,
                packetsSent: s.steadyPacketsSent, packetsReceived: s.steadyPacketsReceived)
        }

        ice = ICEPaths(r.bots)
        var totals = Comeback()
        for b in r.bots { if let c = b.comeback { totals.add(c) } }
        comebacks = Comebacks(connectionDrops: totals.connectionDrops, claims: totals.claims, rejoins: totals.rejoins,
                              mediaRestarts: totals.mediaRestarts, gapSeconds: totals.gapSeconds, seconds: Distribution(totals.seconds),
                              notBack: Dictionary(uniqueKeysWithValues: r.bots.compactMap { b in b.comeback?.gaveUp.map { (b.display, $0) } }))
        if let plan = r.chaos {
            let faults = r.shards.flatMap { $0.faults ?? [] }
            var kinds: [String: ChaosKind] = [:]
            for kind in plan.kinds {
                let list = faults.filter { $0.kind == kind.rawValue }
                kinds[kind.rawValue] = ChaosKind(
                    rate: plan.rate(kind), count: list.count, recovered: list.filter { $0.seconds != nil }.count,
                    seconds: Distribution(list.compactMap(\.seconds)),
                    notRecovered: list.filter { $0.seconds == nil }.map { "\($0.bot) at \(String(format: "%.1f", $0.at)) s: \($0.note)" })
            }
            chaos = kinds
        } else {
            chaos = nil
        }

        var problems: [String] = []
        if bots.failed > 0 { problems.append("\(bots.failed) bot(s) never joined") }
        if bots.lost > 0 { problems.append("\(bots.lost) bot(s) lost their connection") }
        if bots.notStarted > 0 { problems.append("\(bots.notStarted) bot(s) were stopped before joining") }
        if subscribers.decryptFailuresTotal > 0 { problems.append("\(subscribers.decryptFailuresTotal) frame(s) did not decrypt") }
        if publishers.sealFailures > 0 { problems.append("\(publishers.sealFailures) frame(s) could not be sealed") }
        let short = subs.filter { $0.state == .joined && $0.feedsReceiving < expected }.count
        if short > 0 { problems.append("\(short) subscriber(s) did not receive every publisher (expected \(expected) each)") }
        for (kind, k) in (chaos ?? [:]).sorted(by: { $0.key < $1.key }) where !k.notRecovered.isEmpty {
            problems.append("\(k.notRecovered.count) of \(k.count) \(kind) fault(s) not recovered: " + k.notRecovered.joined(separator: "; "))
        }
        // Under chaos the gaps are the point: loss, MOS (webrtcbin counts a stream's gap as
        // loss) and per-feed delivery (a publisher back under a new feed id splits its frames)
        // are shown, not judged.
        let judgeDelivery = r.chaos == nil
        if judgeDelivery, let loss = subscribers.lossPercent, loss > 1 { problems.append(String(format: "packet loss %.2f %% (over 1 %%)", loss)) }
        if judgeDelivery, let mos = subscribers.mos, mos.p5 < 3.6 { problems.append(String(format: "MOS p5 %.2f (under 3.6)", mos.p5)) }
        if judgeDelivery, let ratio = steady?.receivedOverSent, ratio.min < 0.95 { problems.append(String(format: "a subscriber got only %.0f %% of a feed's frames", 100 * ratio.min)) }
        if interrupted { problems.append("the run was interrupted") }
        self.problems = problems
        held = problems.isEmpty
    }
}
