/// How one comeback ended.
public enum ComebackOutcome<Value, Failure: Error> {
    /// Back, by attempt `attempt`, `after` the loss.
    case back(Value, attempt: Int, after: Duration)
    /// Gave up; `last` is nil when no attempt ran.
    case gaveUp(last: Failure?, attempts: Int)
    /// The task was cancelled or the caller no longer wanted it.
    case stopped
}

extension ComebackOutcome: Sendable where Value: Sendable, Failure: Sendable {}

extension ComebackMachine {
    /// Drives the machine through one loss until it is back, gives up or is stopped: sleeps
    /// its waits on `clock` (a test's manual clock moves them on), asks `stillWanted` before
    /// each attempt, and runs `attempt` with its number. The machine must be lost already
    /// (`.lost` handled, or built with `init(_:lostAt:)`); `first` is what that returned.
    public mutating func run<C: Clock, Value>(
        from first: Action, on clock: C,
        stillWanted: () async -> Bool = { true },
        isWorthRetrying: (Failure) -> Bool,
        _ attempt: (Int) async throws(Failure) -> Value
    ) async -> ComebackOutcome<Value, Failure> where C.Instant == Instant {
        var action = first
        while true {
            switch action {
            case .wait(let until):
                try? await clock.sleep(until: until, tolerance: nil)
                guard !Task.isCancelled else { return .stopped }
                action = handle(.tick, at: clock.now)
            case .tryNow(let n):
                guard !Task.isCancelled, await stillWanted() else { return .stopped }
                do {
                    let value = try await attempt(n)
                    guard case .back(let after) = handle(.succeeded, at: clock.now) else { return .stopped }
                    return .back(value, attempt: n, after: after)
                } catch {
                    guard !Task.isCancelled, await stillWanted() else { return .stopped }
                    action = handle(.failed(error, retryable: isWorthRetrying(error)), at: clock.now)
                }
            case .giveUp(let last):
                return .gaveUp(last: last, attempts: spent)
            case .none, .back, .reset:
                return .stopped  // not lost: nothing to bring back
            }
        }
    }
}
