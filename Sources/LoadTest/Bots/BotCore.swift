import Bot
import Foundation
import GStreamerKit
import Janus
import Logging
import Synchronization
import Locking

/// What one join attempt of a load bot holds, as the shared core sees it.
protocol BotAttempt: Sendable {
    var session: JanusSession { get }
    var pipeline: Pipeline { get }
    var clock: PhaseClock { get }
    var tasks: [Task<Void, Never>] { get set }
    /// Leaves the room and detaches the handle (`announce`: the session lives on; otherwise
    /// destroying it ends the handle).
    func leave(announce: Bool) async
}

/// A load bot as its core drives it: one attempt at a time, the bot-specific parts of tearing
/// one down, and how the bot shows it is back after a comeback.
protocol LoadBot<Attempt>: AnyObject, Sendable {
    associatedtype Attempt: BotAttempt
    var core: BotCore<Attempt> { get }
    /// One attempt, on a new session or on `kept`; on failure it tears down what it built.
    func attempt(reusing kept: JanusSession?) async throws
    /// First step of a teardown: stop feeding and following the attempt.
    func stopping(_ attempt: Attempt)
    /// Last step, after the pipeline stopped: remove probes, keep counts.
    func stopped(_ attempt: Attempt)
    /// What grows once the bot is back (subscriber: frames decrypted).
    var progress: Int { get }
    /// After a comeback's attempt: waits until `progress` grew past `before`, or gives up waiting.
    func confirmBack(after before: Int) async
}

extension LoadBot {
    var progress: Int { 0 }
    func confirmBack(after before: Int) async {}
}

/// What the chaos driver and the report read of a bot's comebacks.
protocol ComebackCounts: Sendable {
    var isRecovering: Bool { get }
    var gaveUp: String? { get }
    func comebacks(current session: JanusSession?) async -> Int
    func snapshot(current session: JanusSession?) async -> Comeback
}

/// The state a load bot shares between its join, its comebacks, the chaos driver and the
/// report, behind one lock. The per-packet paths never touch it (they hold their own stats).
final class BotCore<Attempt: BotAttempt>: ComebackCounts {
    enum Phase {
        /// No attempt: before the first join, after a failed one, or after a comeback gave up.
        case idle
        /// The first join's attempt runs: a loss fails it (and the run retries the join).
        case joining(Attempt)
        /// Joined: a loss starts a comeback.
        case up(Attempt)
        /// Coming back from `cause`; the comeback's current attempt, if one runs.
        case comingBack(cause: String, Attempt?)
        /// `leave` waits for a comeback to end; no new one starts.
        case stopping(Attempt?)
        case stopped

        var attempt: Attempt? {
            switch self {
            case .joining(let a), .up(let a): a
            case .comingBack(_, let a), .stopping(let a): a
            case .idle, .stopped: nil
            }
        }
    }

    private struct State {
        var phase = Phase.idle
        var counts = Comeback()
        /// Comebacks finished (rejoins and media restarts; claims are read from the session).
        var completed = 0
        /// The phases of the last attempt torn down, for the report.
        var lastPhases = JoinPhases()
        var comeback: Task<Void, Never>?
    }

    private let state = Locked(State())
    let display: String
    let log: Logger
    let rejoinTimeout: Duration

    init(display: String, log: Logger, rejoinTimeout: Duration) {
        self.display = display
        self.log = log
        self.rejoinTimeout = rejoinTimeout
    }

    // MARK: The attempt

    /// An attempt starts holding `attempt`. Refused (its session closed, an error thrown)
    /// once the bot is leaving.
    func begin(_ attempt: Attempt) async throws {
        let taken = state.withLock { s -> Bool in
            switch s.phase {
            case .idle: s.phase = .joining(attempt)
            case .comingBack(let cause, nil): s.phase = .comingBack(cause: cause, attempt)
            default: return false
            }
            return true
        }
        guard !taken else { return }
        await retire(attempt.session)
        await attempt.session.close()
        throw LoadBotError("\(display) is leaving")
    }

    /// Changes the current attempt (as it gets its handle, probes, tasks).
    func update(_ body: (inout Attempt) -> Void) {
        state.withLock { s in
            switch s.phase {
            case .joining(var a): body(&a); s.phase = .joining(a)
            case .up(var a): body(&a); s.phase = .up(a)
            case .comingBack(let cause, var a?): body(&a); s.phase = .comingBack(cause: cause, a)
            case .stopping(var a?): body(&a); s.phase = .stopping(a)
            default: break
            }
        }
    }

    /// The first join's attempt finished: up from now on (a comeback's is up once confirmed).
    func finished() {
        state.withLock { s in if case .joining(let a) = s.phase { s.phase = .up(a) } }
    }

    var current: Attempt? { state.withLock { $0.phase.attempt } }
    var phase: Phase { state.withLock { $0.phase } }
    var isUp: Bool { state.withLock { if case .up = $0.phase { true } else { false } } }
    var lastPhases: JoinPhases { state.withLock { $0.lastPhases } }
    var isRecovering: Bool { state.withLock { if case .comingBack = $0.phase { true } else { false } } }
    var gaveUp: String? { state.withLock { $0.counts.gaveUp } }

    /// Takes the current attempt out of the state and tears it down. With `keepSession`, the
    /// handle leaves and the session, if still open, is returned for the next attempt;
    /// otherwise the session is destroyed with everything on it.
    @discardableResult
    func tearDownCurrent(_ bot: some LoadBot<Attempt>, keepSession: Bool) async -> JanusSession? {
        let taken = state.withLock { s -> Attempt? in
            let a = s.phase.attempt
            switch s.phase {
            case .joining, .up: s.phase = .idle
            case .comingBack(let cause, _): s.phase = .comingBack(cause: cause, nil)
            case .stopping: s.phase = .stopping(nil)
            case .idle, .stopped: break
            }
            return a
        }
        guard let taken else { return nil }
        return await tearDown(taken, bot, keepSession: keepSession)
    }

    private func tearDown(_ a: Attempt, _ bot: some LoadBot<Attempt>, keepSession: Bool) async -> JanusSession? {
        bot.stopping(a)
        for t in a.tasks { t.cancel() }
        let keep = keepSession ? await a.session.id != 0 : false
        await a.leave(announce: keep)
        if !keep {
            await retire(a.session)
            await a.session.close()
        }
        await a.pipeline.stop()
        bot.stopped(a)
        let phases = a.clock.snapshot
        state.withLock { $0.lastPhases = phases }
        return keep ? a.session : nil
    }

    // MARK: Losses and comebacks

    /// The current attempt lost its PeerConnection or session (`which` tells whether the report
    /// is about it): come back, unless it was not up yet (then the loss fails the attempt).
    func lost(_ why: PeerLoss, _ bot: some LoadBot<Attempt>, which: (Attempt) -> Bool) {
        startComeback(bot, cause: why.description, keepSession: why != .sessionEnded, if: which)
    }

    /// `--chaos ice-restart`: a new PeerConnection on the same session, as for lost media.
    func restartMedia(_ bot: some LoadBot<Attempt>) {
        startComeback(bot, cause: "chaos: ice-restart", keepSession: true, if: { _ in true })
    }

    /// `--chaos ws-drop`: the WebSocket goes away under the session.
    func dropConnection() async {
        guard let session = state.withLock({ s -> JanusSession? in if case .up(let a) = s.phase { a.session } else { nil } }) else { return }
        await session.dropConnection()
    }

    /// Up → coming back, atomically (one comeback at a time; none once leaving): tears the
    /// attempt down and tries again, on the same session if it still works (a new
    /// PeerConnection), else on new sessions with backoff, until the rejoin timeout.
    func startComeback(_ bot: some LoadBot<Attempt>, cause: String, keepSession: Bool, if which: (Attempt) -> Bool) {
        state.withLock { s in
            guard case .up(let a) = s.phase, which(a) else { return }
            s.phase = .comingBack(cause: cause, nil)
            s.comeback = Task { await self.comeBack(bot, from: a, cause: cause, keepSession: keepSession) }
        }
    }

    private func comeBack(_ bot: some LoadBot<Attempt>, from a: Attempt, cause: String, keepSession: Bool) async {
        let clock = ContinuousClock(), lossAt = clock.now, timeout = rejoinTimeout
        log.debug("load: \(display) lost (\(cause)); coming back within \(timeout)")
        let kept = await tearDown(a, bot, keepSession: keepSession)
        let before = bot.progress
        let outcome = await LoadTest.comeBack(on: clock, within: timeout, reusing: kept) { session in
            try await bot.attempt(reusing: session)
        }
        switch outcome {
        case .back(let newSession):
            await bot.confirmBack(after: before)
            let seconds = Double(lossAt.duration(to: clock.now) / .milliseconds(1)) / 1000
            if newSession { BotMetrics.rejoined() } else { BotMetrics.mediaRestarted() }
            BotMetrics.gap(seconds: seconds)
            state.withLock { s in
                if newSession { s.counts.rejoins += 1 } else { s.counts.mediaRestarts += 1 }
                s.counts.seconds.append(seconds)
                s.counts.gaveUp = nil
                s.completed += 1
                if case .comingBack(_, let a?) = s.phase { s.phase = .up(a) }
            }
            log.debug("load: \(display) back after \(String(format: "%.2f", seconds)) s (\(newSession ? "rejoined on a new session" : "new PeerConnection")); cause: \(cause)")
        case .stopped:
            break
        case .gaveUp(let last):
            let why = "did not come back within \(timeout) after \(cause): \(last.map { "\($0)" } ?? "?")"
            log.warning("load: \(display) \(why)")
            state.withLock { s in
                s.counts.gaveUp = why
                if case .comingBack = s.phase { s.phase = .idle }
            }
        }
    }

    /// No comeback starts from now on; one that runs is cancelled and awaited; then the
    /// attempt is torn down. Safe to call more than once.
    func leave(_ bot: some LoadBot<Attempt>) async {
        let task = state.withLock { s -> Task<Void, Never>? in
            switch s.phase {
            case .stopping, .stopped: break
            default: s.phase = .stopping(s.phase.attempt)
            }
            return s.comeback
        }
        task?.cancel()
        await task?.value
        await tearDownCurrent(bot, keepSession: false)
        state.withLock { $0.phase = .stopped }
    }

    // MARK: Counters

    /// A session this bot no longer uses: its drops and claims stay in the totals.
    func retire(_ session: JanusSession) async {
        let (drops, claims) = await session.reconnectionCounters
        state.withLock { s in
            s.counts.connectionDrops += drops
            s.counts.claims += claims
        }
    }

    /// Comebacks so far, claims of the current session included: the chaos driver waits for
    /// this to grow after a fault.
    func comebacks(current session: JanusSession?) async -> Int {
        let claims = await session?.reconnectionCounters.claims ?? 0
        return state.withLock { $0.completed + $0.counts.claims } + claims
    }

    /// The totals, the current session's counters included.
    func snapshot(current session: JanusSession?) async -> Comeback {
        let (drops, claims) = await session?.reconnectionCounters ?? (0, 0)
        var c = state.withLock { $0.counts }
        c.connectionDrops += drops
        c.claims += claims
        return c
    }
}
