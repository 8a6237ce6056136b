import Bot
import Foundation
import Janus
import Logging
import Synchronization
import Locking

/// What one bot lost and how it came back, shared by its comeback task, the chaos driver
/// (which waits for a fault to heal) and the report. Thread-safe.
final class BotRecovery: Sendable {
    private struct State {
        var counts = Comeback()
        /// The loss being recovered from, while a comeback runs.
        var recovering: String?
        /// Comebacks finished (rejoins and media restarts; claims are read from the session).
        var completed = 0
        var stopping = false
        var task: Task<Void, Never>?
    }

    private let state = Locked(State())

    /// Starts a comeback for `cause` unless one runs or the bot is stopping; the body runs
    /// in a task of its own that `stop` cancels.
    @discardableResult
    func begin(_ cause: String, _ body: @escaping @Sendable () async -> Void) -> Bool {
        state.withLock { s in
            guard s.recovering == nil, !s.stopping else { return false }
            s.recovering = cause
            s.task = Task { await body() }
            return true
        }
    }

    /// The comeback worked: on a new session (`rejoin`) or a new PeerConnection on the old one.
    func back(newSession: Bool, after seconds: Double) {
        if newSession { BotMetrics.rejoined() } else { BotMetrics.mediaRestarted() }
        BotMetrics.gap(seconds: seconds)
        state.withLock { s in
            if newSession { s.counts.rejoins += 1 } else { s.counts.mediaRestarts += 1 }
            s.counts.seconds.append(seconds)
            s.counts.gaveUp = nil
            s.completed += 1
            s.recovering = nil
        }
    }

    /// The comeback gave up (deadline) or was stopped.
    func end(gaveUp why: String?) {
        state.withLock { s in
            if let why { s.counts.gaveUp = why }
            s.recovering = nil
        }
    }

    /// A session this bot no longer uses: its drops and claims stay in the totals.
    func retire(_ session: JanusSession) async {
        let (drops, claims) = await session.reconnectionCounters
        state.withLock { s in
            s.counts.connectionDrops += drops
            s.counts.claims += claims
        }
    }

    /// No comeback starts from now on; one that runs is cancelled and awaited.
    func stop() async {
        let task = state.withLock { s -> Task<Void, Never>? in
            s.stopping = true
            return s.task
        }
        task?.cancel()
        await task?.value
    }

    var isStopping: Bool { state.withLock { $0.stopping } }
    var isRecovering: Bool { state.withLock { $0.recovering != nil } }
    var gaveUp: String? { state.withLock { $0.counts.gaveUp } }

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

/// Tries `attempt` with backoff until it works, the bot stops or `timeout` passes after the
/// loss; `attempt` gets the session to reuse on its first try (nil: open a new one) and must
/// close whatever it opened when it fails. Returns whether the bot is back, and the last error.
func comeBack(within timeout: Duration, recovery: BotRecovery, reusing kept: JanusSession?,
              _ attempt: (JanusSession?) async throws -> Void) async -> (back: Bool, newSession: Bool, last: String?) {
    let deadline = ContinuousClock.now + timeout
    var backoff = Backoff(), session = kept, tries = 0, last: String?
    while ContinuousClock.now < deadline {
        if tries > 0 { try? await Task.sleep(for: min(backoff.nextDelay(), deadline - .now)) }
        tries += 1
        if Task.isCancelled || recovery.isStopping { return (false, false, "stopped") }
        do {
            try await attempt(session)
            return (true, session == nil, nil)
        } catch {
            last = String(describing: error)
            // The attempt closed what it had; from here on only new sessions.
            session = nil
        }
    }
    return (false, false, last)
}
