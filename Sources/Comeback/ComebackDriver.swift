/// How one comeback ended.
public enum ComebackOutcome<Value, Failure: Error> {
    /// Back, by attempt `attempt`.
    case back(Value, attempt: Int)
    /// Gave up after `attempts` attempts of this loss; `last` is nil when none of them ran.
    case gaveUp(last: Failure?, attempts: Int)
    /// The task was cancelled or the caller no longer wanted it.
    case stopped
}

extension ComebackOutcome: Sendable where Value: Sendable, Failure: Sendable {}

/// The one wait/tick/try loop every comeback runs (a Janus session's claim, a participant's
/// rejoin, the recorder's resubscription, an agent's rejoin request, a load bot): it sleeps the
/// machine's waits on `clock` (a test's manual clock moves them on), asks `stillWanted` before
/// each attempt and after each failure, and runs `attempt` with its number.
public struct ComebackDriver<C: Clock>: Sendable where C.Duration == Duration {
    public typealias Machine<Failure: Error & Sendable> = ComebackMachine<C.Instant, Failure>
    public let clock: C

    public init(clock: C) { self.clock = clock }

    /// Drives one loss from `first` (what the machine answered to `.lost`) until it is back,
    /// gives up or is stopped. `step` hands an event to the machine wherever it lives and
    /// returns its answer; nil: the comeback is over elsewhere (the caller moved on), so the
    /// loop stops. The success is told to the machine after `attempt` returns (an attempt may
    /// have told it already, atomically with its own state: then `step` may return nil).
    /// Runs on the caller's actor, so `attempt` and `step` may touch its state.
    public func run<Value, Failure: Error & Sendable>(
        from first: Machine<Failure>.Action,
        step: (Machine<Failure>.Event, C.Instant) -> Machine<Failure>.Action?,
        stillWanted: () async -> Bool = { true },
        isWorthRetrying: (Failure) -> Bool,
        isolation: isolated (any Actor)? = #isolation,
        _ attempt: (Int) async throws(Failure) -> Value
    ) async -> ComebackOutcome<Value, Failure> {
        var action = first, tries = 0
        while true {
            switch action {
            case .wait(let until):
                try? await clock.sleep(until: until, tolerance: nil)
                guard !Task.isCancelled, let next = step(.tick, clock.now) else { return .stopped }
                action = next
            case .tryNow(let n):
                guard !Task.isCancelled, await stillWanted() else { return .stopped }
                tries += 1
                do {
                    let value = try await attempt(n)
                    _ = step(.succeeded, clock.now)
                    return .back(value, attempt: n)
                } catch {
                    guard !Task.isCancelled, await stillWanted(),
                          let next = step(.failed(error, retryable: isWorthRetrying(error)), clock.now) else { return .stopped }
                    action = next
                }
            case .giveUp(let last):
                return .gaveUp(last: last, attempts: tries)
            case .none, .back, .reset:
                return .stopped  // not lost: nothing to bring back
            }
        }
    }
}

extension ComebackMachine {
    /// Drives this machine (lost already: `.lost` handled, or built with `init(_:lostAt:)`;
    /// `first` is what that returned) with the shared driver on `clock`.
    public mutating func run<C: Clock, Value>(
        from first: Action, on clock: C,
        stillWanted: () async -> Bool = { true },
        isWorthRetrying: (Failure) -> Bool,
        isolation: isolated (any Actor)? = #isolation,
        _ attempt: (Int) async throws(Failure) -> Value
    ) async -> ComebackOutcome<Value, Failure> where C.Instant == Instant {
        await ComebackDriver(clock: clock).run(from: first, step: { self.handle($0, at: $1) }, stillWanted: stillWanted,
                                               isWorthRetrying: isWorthRetrying, isolation: isolation, attempt)
    }
}
