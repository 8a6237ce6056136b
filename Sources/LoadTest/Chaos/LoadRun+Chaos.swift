import Bot
import Foundation
import FrameCrypto
import Logging
import Synchronization
import Locking

/// `--chaos`: faults injected into the room during the steady window, and for each the time
/// until the bots it hit decrypt frames again.
extension LoadRun {
    /// Measurements still running when injection stops.
    final class FaultWatch: Sendable {
        let tasks = Locked<[Task<Void, Never>]>([])
        func add(_ t: Task<Void, Never>) { tasks.withLock { $0.append(t) } }

        /// Waits for every measurement, at most `grace`; the rest are cancelled (recorded as
        /// not recovered by the end of the run).
        func settle(grace: Duration) async {
            let all = tasks.withLock { $0 }
            let timer = Task {
                try? await Task.sleep(for: grace)
                for t in all { t.cancel() }
            }
            for t in all { await t.value }
            timer.cancel()
        }
    }

    /// Injects each kind of fault at its rate until cancelled.
    func injectFaults(_ chaos: ChaosPlan, publishers: [PublisherBot], subscribers: [SubscriberBot], started: Date, watch: FaultWatch) async {
        let bots: [any ChaosTarget] = publishers + subscribers
        await withTaskGroup(of: Void.self) { group in
            for kind in chaos.kinds {
                let perMinute = chaos.rate(kind) * Double(kind.perBot ? max(1, bots.count) : 1)
                let mean = 60 / perMinute
                group.addTask { [self] in
                    while !Task.isCancelled {
                        try? await Task.sleep(for: .seconds(mean * Double.random(in: 0.5...1.5)))
                        if Task.isCancelled { return }
                        await inject(kind, publishers: publishers, subscribers: subscribers, started: started, watch: watch)
                    }
                }
            }
        }
    }

    private func record(_ f: FaultRecord) {
        state.withLock { $0.faults.append(f) }
        let how = f.seconds.map { String(format: "back after %.3f s (%@)", $0, f.note) } ?? "NOT back: \(f.note)"
        if f.seconds == nil { plan.logger.warning("load: chaos \(f.kind) on \(f.bot): \(how)") } else { plan.logger.debug("load: chaos \(f.kind) on \(f.bot): \(how)") }
    }

    private func inject(_ kind: ChaosPlan.Kind, publishers: [PublisherBot], subscribers: [SubscriberBot], started: Date, watch: FaultWatch) async {
        let log = plan.logger
        if kind == .keyRotation {
            guard plan.protection.isEncrypted else { return }
            let key = CallKey.random(), switchAt = Date().addingTimeInterval(3)
            // ECALL-WIRE §4: the future key goes on every ring at once, current at an absolute time.
            plan.protection.schedule(key, at: switchAt.timeIntervalSince1970)
            for b in publishers as [any ChaosTarget] + subscribers { b.scheduleKey(key, at: switchAt.timeIntervalSince1970) }
            log.debug("load: chaos key-rotation: new key on every ring, current at +3 s")
            watch.add(Task { [self] in
                let at = switchAt.timeIntervalSince(started)
                try? await Task.sleep(for: .seconds(max(0, switchAt.timeIntervalSinceNow)))
                let listening = subscribers.filter { $0.isUp && !$0.recovery.isRecovering }
                let seconds = await firstFrames(on: listening, after: switchAt, opened: { $0.frames.opened })
                record(FaultRecord(kind: kind.rawValue, bot: "all", at: at, seconds: seconds,
                                   note: seconds == nil ? "a subscriber decrypted nothing after the switch" : "switched"))
            })
            return
        }
        let candidates: [any ChaosTarget] = (publishers as [any ChaosTarget] + subscribers).filter { $0.isUp && !$0.recovery.isRecovering }
        guard let bot = candidates.randomElement() else { return }
        let before = await bot.recovery.comebacks(current: bot.session)
        let counts = await bot.recovery.snapshot(current: bot.session)
        let oldFeed = (bot as? PublisherBot)?.feedID
        // Subscribers that were receiving the publisher hit: they must decrypt it again.
        let listeners = oldFeed.map { feed in subscribers.filter { $0.isUp && $0.feedIDs.contains(feed) } } ?? []
        let t0 = Date()
        switch kind {
        case .wsDrop: await bot.dropConnection()
        case .iceRestart: bot.restartMedia()
        case .keyRotation: return
        }
        log.debug("load: chaos \(kind.rawValue) on \(bot.key)")
        watch.add(Task { [self] in
            let at = t0.timeIntervalSince(started)
            let deadline = t0.addingTimeInterval(plan.rejoinTimeout.seconds + 10)
            // 1. The bot is back: the session claimed, or a comeback finished.
            var how = ""
            while true {
                if Task.isCancelled || Date() > deadline {
                    return record(FaultRecord(kind: kind.rawValue, bot: bot.key, at: at, seconds: nil, note: "not back by the end of the run"))
                }
                if let why = bot.recovery.gaveUp, !bot.recovery.isRecovering, Date() > t0 {
                    if await bot.recovery.comebacks(current: bot.session) <= before {
                        return record(FaultRecord(kind: kind.rawValue, bot: bot.key, at: at, seconds: nil, note: why))
                    }
                }
                if !bot.recovery.isRecovering, bot.isUp {
                    let now = await bot.recovery.comebacks(current: bot.session)
                    if now > before {
                        let c = await bot.recovery.snapshot(current: bot.session)
                        how = c.rejoins > counts.rejoins ? "rejoined on a new session"
                            : c.mediaRestarts > counts.mediaRestarts ? "new PeerConnection" : "session claimed"
                        break
                    }
                }
                try? await Task.sleep(for: .milliseconds(10))
            }
            let backAt = Date()
            // 2. A good decrypted frame after that, where it counts.
            let seconds: Double?
            if let sub = bot as? SubscriberBot {
                seconds = await firstFrames(on: [sub], after: backAt, opened: { $0.frames.opened }, from: t0)
            } else if let pub = bot as? PublisherBot, let feed = pub.feedID {
                let sameFeed = feed == oldFeed
                how += sameFeed ? " (same feed)" : " (new feed \(feed))"
                seconds = await firstFrames(on: listeners, after: backAt, opened: { $0.framesByFeed[feed] ?? 0 }, from: t0)
            } else {
                seconds = nil
            }
            record(FaultRecord(kind: kind.rawValue, bot: bot.key, at: at, seconds: seconds,
                               note: seconds == nil ? "back, but no decrypted frame followed" : how))
        })
    }

    /// Seconds from `from` (default `after`) until every subscriber in `subs` that does not give
    /// up has decrypted a frame after `after` (counted by `opened`, which must never go back); polled every 10 ms, for at most
    /// the rejoin timeout + 10 s. Nil if one never did.
    private func firstFrames(on subs: [SubscriberBot], after: Date, opened: @Sendable (SubscriberBot) -> Int, from: Date? = nil) async -> Double? {
        let start = from ?? after
        var waiting = Dictionary(uniqueKeysWithValues: subs.map { ($0.index, (bot: $0, base: opened($0))) })
        var last = after
        let deadline = after.addingTimeInterval(plan.rejoinTimeout.seconds + 10)
        while !waiting.isEmpty {
            if Task.isCancelled || Date() > deadline { return nil }
            for (i, w) in waiting {
                // A listener that gave up is reported as lost, not waited for; one that is coming
                // back (e.g. a new PeerConnection to pick the feed up) is waited for.
                if w.bot.lost != nil { waiting[i] = nil; continue }
                if opened(w.bot) > w.base {
                    waiting[i] = nil
                    last = Date()
                }
            }
            if !waiting.isEmpty { try? await Task.sleep(for: .milliseconds(10)) }
        }
        return max(0, last.timeIntervalSince(start))
    }
}

extension Duration {
    /// In seconds, as a Double.
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
