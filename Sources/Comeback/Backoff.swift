/// The one backoff: waits of `initial`, doubling up to `cap`, each scaled by a random factor in
/// `jitter` so that many clients cut off at once (a load test, a Janus restart, spool entries
/// that failed together) do not come back in lockstep. A comeback walks it (`nextDelay`,
/// `reset`); a spool, whose tries outlive the process, asks by count (`delay(afterFailures:)`).
public struct Backoff: Sendable {
    public var initial: Duration
    public var cap: Duration
    /// What each wait is scaled by; `1...1`: no jitter (a pause that must not come sooner).
    public var jitter: ClosedRange<Double>
    /// Waits handed out since the start or the last `reset`.
    public private(set) var failures = 0
    private var random: Source

    /// About what ECall phones do (reconnect after 1 s), but starting faster: a WebSocket killed
    /// under a running Janus is usually back on the first try. `seed`: the jitter repeats (tests);
    /// nil: the system's generator.
    public init(initial: Duration = .milliseconds(100), cap: Duration = .seconds(5), jitter: ClosedRange<Double> = 0.5...1, seed: UInt64? = nil) {
        (self.initial, self.cap, self.jitter) = (initial, cap, jitter)
        random = seed.map { .seeded(SplitMix64(state: $0)) } ?? .system
    }

    /// The wait after `n` failures before jitter: `initial` doubled `n` times, at most `cap`.
    public func base(afterFailures n: Int) -> Duration {
        // 2^30 × any initial is past any cap; the clamp keeps the product from overflowing.
        min(initial * (1 << min(max(n, 0), 30)), cap)
    }

    /// The wait after `n` failures, jittered with `generator`.
    public func delay(afterFailures n: Int, using generator: inout some RandomNumberGenerator) -> Duration {
        base(afterFailures: n) * Double.random(in: jitter, using: &generator)
    }

    /// The wait after `n` failures, jittered with the system's generator.
    public func delay(afterFailures n: Int) -> Duration {
        var system = SystemRandomNumberGenerator()
        return delay(afterFailures: n, using: &system)
    }

    /// The wait before the next attempt; the one after it is twice as long (up to `cap`).
    public mutating func nextDelay() -> Duration {
        defer { failures += 1 }
        switch random {
        case .system: return delay(afterFailures: failures)
        case .seeded(var g):
            defer { random = .seeded(g) }
            return delay(afterFailures: failures, using: &g)
        }
    }

    /// Starts again from `initial` (after a success).
    public mutating func reset() { failures = 0 }

    private enum Source: Sendable {
        case system
        case seeded(SplitMix64)
    }
}

/// A small seeded generator (SplitMix64): the same seed gives the same jitter on every machine.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    public var state: UInt64

    public init(state: UInt64) { self.state = state }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
