import Comeback

/// How hard the agent tries to get back into a call whose media it lost (ECALL-WIRE §7, rejoin).
struct RejoinPolicy: Sendable {
    /// How long a `request-rejoin` waits for a participant's `participant_accept_rejoin`.
    var acceptTimeout: Duration = .seconds(10)
    /// Requests before the call is given up as lost.
    var attempts = 4
    /// The wait before each request after the first: 1 s, doubling, at most `maxBackoff`, each
    /// scaled by 0.5…1 (`Backoff`'s jitter: agents that lost one Janus do not ask in lockstep).
    var firstBackoff: Duration = .seconds(1)
    var maxBackoff: Duration = .seconds(8)
    /// Media that ran this long after a (re)join earns a full set of attempts for its next loss.
    /// Media that fails sooner spends from the same set, so media that can never run (a Janus
    /// that refuses the room every time) ends in a bounded number of rejoins, not a loop.
    var stableAfter: Duration = .seconds(30)

    /// The comeback machine's configuration: no deadline, a budget of `attempts`.
    var comeback: ComebackPolicy {
        ComebackPolicy(backoff: Backoff(initial: firstBackoff, cap: maxBackoff), attempts: attempts, stableAfter: stableAfter)
    }
}

/// Why a rejoin attempt failed, as the log and the give-up message say it.
struct RejoinFailure: Error, Sendable, Equatable, CustomStringConvertible {
    let description: String
}
