/// When to give up getting back what was lost (a session, an ICE path, Janus itself, a call's
/// media), and how long to wait between attempts.
public struct ComebackPolicy: Sendable {
    /// The waits between attempts (none before the first attempt of a full budget).
    public var backoff: Backoff
    /// Give up this long after the loss; nil: no deadline.
    public var deadline: Duration?
    /// Give up after this many attempts since the last stable run; nil: no limit.
    public var attempts: Int?
    /// A run that lasted this long earns a full budget (attempts and backoff) for its next
    /// loss; one that failed sooner spends from the same budget, so something that can never
    /// work ends in a bounded number of attempts, not a loop. nil: every loss gets a full budget.
    public var stableAfter: Duration?

    public init(backoff: Backoff = Backoff(), deadline: Duration? = nil, attempts: Int? = nil, stableAfter: Duration? = nil) {
        self.backoff = backoff
        self.deadline = deadline
        self.attempts = attempts
        self.stableAfter = stableAfter
    }
}

/// One comeback loop as a value: it is told what happened and when, and answers what to do
/// next. No I/O, no sleeping, no clock of its own (its driver reads an injected `Clock`), so
/// every transition is tested with instants alone. One machine lives as long as what it
/// brings back: the budget it keeps across losses is what `stableAfter` refills.
public struct ComebackMachine<Instant: InstantProtocol, Failure: Error>: Sendable
where Instant.Duration == Duration, Failure: Sendable, Instant: Sendable {
    public enum State: Sendable {
        /// Running (since the instant it came up; nil: as first started, with a full budget).
        case up(since: Instant?)
        /// Lost; the next attempt is due then.
        case waiting(until: Instant)
        /// Attempt `n` (counted from the last stable run) runs.
        case trying(attempt: Int)
        /// Gave up; only a new loss after a `succeeded` starts again.
        case gaveUp
    }

    public enum Event: Sendable {
        /// What ran is lost. `since`: when the outage began, if before now (the deadline counts from it).
        case lost(since: Instant? = nil)
        /// The time now: a wait may be over, a deadline passed.
        case tick
        /// The attempt running came back.
        case succeeded
        /// The attempt running failed; `retryable`: whether trying again later can help.
        case failed(Failure, retryable: Bool)
        /// Still up now: if up `stableAfter` already, the budget is full again.
        case stable
    }

    public enum Action: Sendable {
        /// Nothing to do (an event that changes nothing: a second loss report, an early tick).
        case none
        /// Sleep until then, then send `.tick`.
        case wait(until: Instant)
        /// Start attempt `n` now (counted from the last stable run, from 1); it has started.
        case tryNow(attempt: Int)
        /// Stop: the deadline passed, the attempts are spent, or the error cannot be retried.
        /// `last` is nil when no attempt of this loss ran (spent before it).
        case giveUp(last: Failure?)
        /// Back up, `after` the loss.
        case back(after: Duration)
        /// Up long enough: the next loss has a full budget again.
        case reset
    }

    public let policy: ComebackPolicy
    public private(set) var state: State = .up(since: nil)
    /// Attempts spent since the last stable run.
    public private(set) var spent = 0
    /// The last failure of this loss.
    public private(set) var last: Failure?
    private var backoff: Backoff
    private var lostAt: Instant?
    private var deadline: Instant?

    public init(_ policy: ComebackPolicy) {
        self.policy = policy
        self.backoff = policy.backoff
    }

    /// A machine that starts lost (the caller only starts one once something is lost).
    public init(_ policy: ComebackPolicy, lostAt now: Instant, since: Instant? = nil) {
        self.init(policy)
        _ = handle(.lost(since: since), at: now)
    }

    /// The instant the current loss counts from.
    public var lossStarted: Instant? { lostAt }

    public mutating func handle(_ event: Event, at now: Instant) -> Action {
        switch (event, state) {
        case (.lost(let since), .up(let upSince)):
            if let upSince, let stableAfter = policy.stableAfter, upSince.duration(to: now) >= stableAfter { refill() }
            if upSince == nil || policy.stableAfter == nil { refill() }
            lostAt = since ?? now
            deadline = policy.deadline.map { (since ?? now).advanced(by: $0) }
            last = nil
            return next(at: now, first: spent == 0)
        case (.lost, _):
            return .none  // one comeback at a time: a second report of the same loss
        case (.tick, .waiting(let until)):
            if let deadline, now >= deadline { return giveUp() }
            guard now >= until else { return .wait(until: until) }
            return start()
        case (.succeeded, .trying):
            state = .up(since: now)
            return .back(after: (lostAt ?? now).duration(to: now))
        case (.failed(let error, let retryable), .trying):
            last = error
            return retryable ? next(at: now, first: false) : giveUp()
        case (.stable, .up(let since?)):
            guard let stableAfter = policy.stableAfter, since.duration(to: now) >= stableAfter, spent > 0 else { return .none }
            refill()
            return .reset
        default:
            return .none
        }
    }

    private mutating func refill() {
        spent = 0
        backoff.reset()
    }

    private mutating func next(at now: Instant, first: Bool) -> Action {
        if let limit = policy.attempts, spent >= limit { return giveUp() }
        if let deadline, now >= deadline { return giveUp() }
        if first { return start() }
        var until = now.advanced(by: backoff.nextDelay())
        if let deadline, deadline < until { until = deadline }
        state = .waiting(until: until)
        return .wait(until: until)
    }

    private mutating func start() -> Action {
        spent += 1
        state = .trying(attempt: spent)
        return .tryNow(attempt: spent)
    }

    private mutating func giveUp() -> Action {
        state = .gaveUp
        return .giveUp(last: last)
    }
}

extension ComebackMachine.Action: Equatable where Failure: Equatable {}
