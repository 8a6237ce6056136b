import Comeback
import Janus

/// How a load bot's comeback ended.
enum BotComebackOutcome {
    /// Back, on a new session or on the one kept (a new PeerConnection).
    case back(newSession: Bool)
    case gaveUp(last: (any Error)?)
    /// Cancelled: the bot is leaving.
    case stopped
}

/// Tries `attempt` with backoff until it works, the task is cancelled or `timeout` passes
/// after the loss, on `clock` (a test's manual clock moves it on). `attempt` gets the session
/// to reuse on its first try (nil: open a new one) and must close whatever it opened when it
/// fails: from then on only new sessions are tried. Every error is worth another try here:
/// a load bot keeps trying until its deadline.
func comeBack<C: Clock>(on clock: C, within timeout: Duration, reusing kept: JanusSession?,
                        _ attempt: (JanusSession?) async throws -> Void) async -> BotComebackOutcome where C.Duration == Duration {
    var machine = ComebackMachine<C.Instant, any Error>(ComebackPolicy(deadline: timeout))
    let first = machine.handle(.lost(), at: clock.now)
    var session = kept
    let outcome = await machine.run(from: first, on: clock, isWorthRetrying: { _ in true }) { (_: Int) async throws(any Error) -> Bool in
        let reuse = session
        session = nil
        try await attempt(reuse)
        return reuse != nil
    }
    switch outcome {
    case .back(let reused, _): return .back(newSession: !reused)
    case .gaveUp(let last, _): return .gaveUp(last: last)
    case .stopped: return .stopped
    }
}
