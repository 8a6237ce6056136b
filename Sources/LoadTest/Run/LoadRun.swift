import Foundation
import Bot
import Comeback
import FrameCrypto
import GStreamerKit
import Logging
import Synchronization
import Locking

/// What the live display and the metrics endpoint see once a second.
public struct LiveFigures: Sendable {
    public var sample: TimelineSample
    public var planned: Int
    public var retries: Int
    public var phase: String
    public var packetsSent: UInt64
    public var packetsReceived: UInt64
    /// Over all bots so far: how they came back (drops, claims, rejoins, media restarts, gap).
    public var comebacks = Comeback()
    /// Chaos faults injected so far by kind, and those not recovered (yet).
    public var faults: [String: Int] = [:]
    public var faultsNotRecovered = 0
}

/// Runs one shard of a load test: starts the shared encoder and the room watcher, ramps the
/// bots in (retrying failed joins), measures, and leaves. Cancelling it (Ctrl-C) ends the
/// test early; the result still comes back with what was measured.
public final class LoadRun: Sendable {
    let plan: LoadPlan
    /// Shared with the measuring extension (LoadRun+Measure.swift).
    let state = Locked(State())
    let onSample: @Sendable (LiveFigures) -> Void

    struct State {
        var records: [String: BotRecord] = [:]
        var settled = 0
        var retries = 0
        var timeline: [TimelineSample] = []
        /// Latest per-stream inbound statistics per subscriber (for loss, jitter, MOS).
        var inbound: [String: [RTPStreamStats]] = [:]
        /// The same at the start of the steady window.
        var inboundAtSteady: [String: [RTPStreamStats]] = [:]
        var bytesOut: UInt64 = 0, bytesIn: UInt64 = 0
        var packetsOut: UInt64 = 0, packetsIn: UInt64 = 0, lostIn: Int64 = 0
        var mbpsOut = 0.0, mbpsIn = 0.0
        var lastPass: Date?
        var lossPercent: Double?
        var phase = "starting"
        var faults: [FaultRecord] = []
        /// Totals of every bot's comebacks, refreshed once a second.
        var comebacks = Comeback()
    }

    public init(plan: LoadPlan, onSample: @escaping @Sendable (LiveFigures) -> Void = { _ in }) {
        self.plan = plan
        self.onSample = onSample
    }

    public func run() async throws -> LoadResult {
        let log = plan.logger
        let started = Date()
        let groups = plan.fanOutGroups ?? max(1, ProcessInfo.processInfo.activeProcessorCount)
        let source = try await LoadSource(file: plan.media, video: plan.video ? plan.videoSettings : nil, groups: groups, library: plan.library)
        let baseline = ProcessSample.now()
        let watcher: RoomWatcher
        do {
            watcher = try await RoomWatcher.join(url: plan.janusURL, options: plan.janus, room: plan.room,
                                                 display: "sfubot-load:watcher-\(plan.shard.index)", logger: log)
        } catch {
            source.stop()
            throw error
        }
        let context = LoadContext(janusURL: plan.janusURL, janus: plan.janus, ice: plan.ice, room: plan.room, protection: plan.protection,
                                  library: plan.library, logger: log, source: source, watcher: watcher,
                                  subscribeLimit: plan.subscribeLimit, plainReceive: plan.plainReceive, joinTimeout: plan.joinTimeout,
                                  rejoinTimeout: plan.rejoinTimeout, sendPath: plan.sendPath,
                                  receivePath: plan.receivePath, decodeEvery: plan.decodeEvery, answerNACKs: plan.answerNACKs)
        // Per-sender keys: the participant id (before the colon) names the publisher's keys.
        let perSender = if case .perSender = plan.protection { true } else { false }
        let publishers = plan.shard.indices(of: plan.publishers).map {
            PublisherBot(index: $0, display: perSender ? "\(LoadPlan.senderID($0)):sfubot-load" : "sfubot-load:p\($0)", context: context)
        }
        let subscribers = plan.shard.indices(of: plan.subscribers).map { SubscriberBot(index: $0, display: "sfubot-load:s\($0)", context: context) }
        state.withLock { s in
            for p in publishers { s.records["p\(p.index)"] = BotRecord(role: .publisher, index: p.index, shard: plan.shard.index, display: p.display) }
            for b in subscribers { s.records["s\(b.index)"] = BotRecord(role: .subscriber, index: b.index, shard: plan.shard.index, display: b.display) }
            s.phase = "ramping"
        }
        let bots: [(key: String, join: @Sendable () async throws -> Void, leave: @Sendable () async -> Void)] =
            publishers.map { p in ("p\(p.index)", { try await p.join() }, { await p.leave() }) }
            + subscribers.map { b in ("s\(b.index)", { try await b.join() }, { await b.leave() }) }
        log.info("load: shard \(plan.shard.index)/\(plan.shard.count): \(publishers.count) publishers, \(subscribers.count) subscribers at \(plan.ramp)/s")

        // Ramp: bot k starts k/ramp seconds in; a failed join is retried with backoff.
        let joining = Task {
            await withTaskGroup(of: Void.self) { group in
                for (k, bot) in bots.enumerated() {
                    group.addTask { [self] in
                        try? await Task.sleep(until: .now + .milliseconds(Int(1000 * Double(k) / max(plan.ramp, 0.001))), clock: .continuous)
                        await lifecycle(key: bot.key, join: bot.join, leave: bot.leave, runStart: started)
                    }
                }
            }
        }
        let sampling = Task { [self] in
            await sample(publishers: publishers, subscribers: subscribers, started: started)
        }
        let source2 = source
        let encoder = Task { try await source2.follow() }

        // Wait for every bot to settle, then hold the room for the duration.
        var steadyStart: Date?, steadyEnd: Date?, steadyCPU: Double?, steadyKernelCPU: Double?, steadySent: UInt64?, steadyReceived: UInt64?
        var sentAtStart: [Int: Int] = [:], openedAtStart: [Int: [Int64: Int]] = [:]
        while !Task.isCancelled, state.withLock({ $0.settled }) < bots.count {
            try? await Task.sleep(for: .milliseconds(200))
        }
        // Subscribers are in once ICE is up; give their streams up to 10 s to deliver a first
        // frame, so the window measures a room in which media flows everywhere it can.
        // Each must also have subscribed to every publisher it should (they add feeds once a
        // second as publishers appear).
        let settledAt = Date()
        while !Task.isCancelled, Date().timeIntervalSince(settledAt) < 10 {
            let expected = min(plan.subscribeLimit ?? Int.max, await watcher.current.count)
            let waiting = subscribers.contains { b in
                guard b.lost == nil, state.withLock({ $0.records["s\(b.index)"]?.state == .joined }) else { return false }
                let c = b.feedCount
                return c.subscribed < expected || c.arriving < c.subscribed
            }
            if !waiting { break }
            try? await Task.sleep(for: .milliseconds(200))
        }
        if !Task.isCancelled {
            steadyStart = Date()
            state.withLock { $0.phase = "steady" }
            await statsPass(publishers: publishers, subscribers: subscribers)
            state.withLock { $0.inboundAtSteady = $0.inbound }
            let cpu0 = ProcessSample.now()
            let (sent0, received0) = state.withLock { ($0.packetsOut, $0.packetsIn) }
            for p in publishers { sentAtStart[p.index] = p.audioStats.snapshot.sealed }
            for b in subscribers { openedAtStart[b.index] = b.framesByFeed }
            log.info("load: all bots settled after \(String(format: "%.1f", Date().timeIntervalSince(started))) s; holding")
            let faultWatch = FaultWatch()
            let chaos = plan.chaos.map { chaos in
                Task { await injectFaults(chaos, publishers: publishers, subscribers: subscribers, started: started, watch: faultWatch) }
            }
            if let duration = plan.duration { try? await Task.sleep(for: duration) } else {
                while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
            }
            if let chaos {
                // Faults stop with the window; those still healing get a little longer.
                chaos.cancel()
                await chaos.value
                await Task { await faultWatch.settle(grace: .seconds(min(15, plan.rejoinTimeout.seconds + 5))) }.value
            }
            // Frames first (atomic counters), then the network counters.
            for p in publishers {
                let sent = p.audioStats.snapshot.sealed - (sentAtStart[p.index] ?? 0)
                state.withLock { $0.records["p\(p.index)"]?.steadyFramesSent = sent }
            }
            for b in subscribers {
                let now = b.framesByFeed, before = openedAtStart[b.index] ?? [:]
                var byFeed: [String: Int] = [:]
                for (feed, n) in now { byFeed[String(feed)] = n - (before[feed] ?? 0) }
                state.withLock { $0.records["s\(b.index)"]?.steadyFramesByFeed = byFeed }
            }
            steadyEnd = Date()
            let cpu1 = ProcessSample.now()
            await statsPass(publishers: publishers, subscribers: subscribers)
            let (sent1, received1) = state.withLock { ($0.packetsOut, $0.packetsIn) }
            if let cpu0, let cpu1 { (steadyCPU, steadyKernelCPU) = (cpu1.cpuSeconds - cpu0.cpuSeconds, cpu1.kernelSeconds - cpu0.kernelSeconds) }
            steadySent = sent1 &- sent0
            steadyReceived = received1 &- received0
        }
        let interrupted = Task.isCancelled
        // Leaving must not be cut short by the cancellation that may have brought us here.
        let peak = await Task { [self] () -> (Int, Int) in
            state.withLock { $0.phase = "stopping" }
            joining.cancel()
            await joining.value
            if steadyEnd == nil { await statsPass(publishers: publishers, subscribers: subscribers) }
            sampling.cancel()
            await sampling.value
            let peak = state.withLock { s in (s.timeline.map(\.rssMB).max() ?? 0, s.timeline.map(\.threads).max() ?? 0) }
            for p in publishers {
                let c = await p.comeback
                state.withLock { $0.records["p\(p.index)"]?.comeback = c }
            }
            for b in subscribers {
                let c = await b.comeback
                state.withLock { $0.records["s\(b.index)"]?.comeback = c }
            }
            finalizeRecords(publishers: publishers, subscribers: subscribers)
            await withTaskGroup(of: Void.self) { group in
                for bot in bots { group.addTask { await bot.leave() } }
            }
            await watcher.leave()
            encoder.cancel()
            source.stop()
            return (Int(peak.0 * 1_048_576), peak.1)
        }.value
        let s = state.withLock { $0 }
        let shard = LoadResult.Shard(
            index: plan.shard.index, count: plan.shard.count, host: ProcessInfo.processInfo.hostName,
            started: started, ended: Date(), steadyStart: steadyStart, steadyEnd: steadyEnd, interrupted: interrupted,
            timeline: s.timeline, steadyCPUSeconds: steadyCPU, steadyKernelCPUSeconds: steadyKernelCPU, peakRSSBytes: peak.0, peakThreads: peak.1,
            baselineThreads: baseline?.threads ?? 0, baselineRSSBytes: baseline?.residentBytes ?? 0,
            steadyPacketsSent: steadySent, steadyPacketsReceived: steadyReceived, fanOutGroups: groups,
            sendPath: plan.sendPath.rawValue, directFallbacks: context.directFallbacks.current,
            receivePath: plan.subscribers > 0 ? plan.receivePath.rawValue : nil,
            receivedPastQueue: plan.subscribers > 0 ? context.receivedPastQueue.current : nil,
            receivedThroughQueue: plan.subscribers > 0 ? context.receivedThroughQueue.current : nil,
            faults: plan.chaos == nil ? nil : s.faults.sorted { $0.at < $1.at })
        return LoadResult(
            room: plan.room, janus: plan.janusURL, e2ee: plan.protection.isEncrypted, video: plan.video, media: plan.media,
            publishers: plan.publishers, subscribers: plan.subscribers, subscribeLimit: plan.subscribeLimit,
            chaos: plan.chaos, shards: [shard], bots: s.records.values.sorted { ($0.role.rawValue, $0.index) < ($1.role.rawValue, $1.index) })
    }

    /// Between a bot's join attempts: 1 s doubling to 30 s, jittered, as bots refused together
    /// (an overloaded Janus) should not all ask again in the same instant.
    static let joinRetry = Backoff(initial: .seconds(1), cap: .seconds(30))

    /// One bot: join (with retries and backoff) and mark how it went.
    private func lifecycle(key: String, join: @Sendable () async throws -> Void, leave: @Sendable () async -> Void, runStart: Date) async {
        defer { state.withLock { $0.settled += 1 } }
        for attempt in 0...plan.retries {
            if Task.isCancelled { return }
            state.withLock {
                $0.records[key]?.attempts = attempt + 1
                if attempt > 0 { $0.retries += 1 }
            }
            let began = Date()
            do {
                try await join()
                state.withLock {
                    $0.records[key]?.state = .joined
                    $0.records[key]?.error = nil
                    $0.records[key]?.startedAt = began.timeIntervalSince(runStart)
                }
                return
            } catch {
                if Task.isCancelled { return }
                plan.logger.warning("load: \(key) attempt \(attempt + 1) failed: \(error)")
                state.withLock { $0.records[key]?.error = String(describing: error) }
                if attempt < plan.retries { try? await Task.sleep(for: Self.joinRetry.delay(afterFailures: attempt)) }
            }
        }
        state.withLock { $0.records[key]?.state = .failed }
    }
}
