/// Waits between reconnection attempts: `initial`, doubling up to `cap`, each scaled by a random
/// factor in 0.5…1 so that many clients cut off at once (a load test, a Janus restart) do not
/// come back in lockstep.
public struct Backoff: Sendable {
    public var initial: Duration
    public var cap: Duration
    private var next: Duration?

    /// About what ECall phones do (reconnect after 1 s), but starting faster: a WebSocket killed
    /// under a running Janus is usually back on the first try.
    public init(initial: Duration = .milliseconds(100), cap: Duration = .seconds(5)) {
        self.initial = initial
        self.cap = cap
    }

    /// The wait before the next attempt.
    public mutating func nextDelay() -> Duration {
        let base = next ?? initial
        next = min(base * 2, cap)
        return base * Double.random(in: 0.5...1)
    }

    /// Starts again from `initial` (after a success).
    public mutating func reset() { next = nil }
}
