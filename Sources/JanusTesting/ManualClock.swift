import Synchronization
import Locking

/// A clock that moves only when a test says so: sleepers wake when `advance` passes their
/// deadline, so a test of timed behaviour neither sleeps nor depends on the machine's load.
public final class ManualClock: Clock, Sendable {
    public struct Instant: InstantProtocol, Sendable {
        /// Time since the clock was made.
        public var offset: Duration
        public init(offset: Duration) { self.offset = offset }
        public func advanced(by d: Duration) -> Instant { Instant(offset: offset + d) }
        public func duration(to other: Instant) -> Duration { other.offset - offset }
        public static func < (a: Instant, b: Instant) -> Bool { a.offset < b.offset }
    }

    private struct Sleeper {
        let id: Int
        let deadline: Instant
        let wake: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now = Instant(offset: .zero)
        var sleepers: [Sleeper] = []
        var nextID = 0
        var cancelled: Set<Int> = []
    }

    private let state = Locked(State())

    public init() {}

    public var now: Instant { state.withLock { $0.now } }
    public var minimumResolution: Duration { .nanoseconds(1) }
    /// How many tasks sleep on this clock now.
    public var sleepers: Int { state.withLock { $0.sleepers.count } }
    /// The earliest deadline a task sleeps until.
    public var nextDeadline: Instant? { state.withLock { $0.sleepers.map(\.deadline).min() } }

    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        let id = state.withLock { s in defer { s.nextID += 1 }; return s.nextID }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
                let wake = state.withLock { s -> Result<Void, any Error>? in
                    if s.cancelled.remove(id) != nil { return .failure(CancellationError()) }
                    if deadline <= s.now { return .success(()) }
                    s.sleepers.append(Sleeper(id: id, deadline: deadline, wake: c))
                    return nil
                }
                if let wake { c.resume(with: wake) }
            }
        } onCancel: {
            let c = state.withLock { s -> CheckedContinuation<Void, any Error>? in
                guard let i = s.sleepers.firstIndex(where: { $0.id == id }) else {
                    s.cancelled.insert(id)  // cancelled before it slept: it will not
                    return nil
                }
                return s.sleepers.remove(at: i).wake
            }
            c?.resume(throwing: CancellationError())
        }
    }

    /// Moves time on by `d`, waking every sleeper whose deadline it reaches.
    public func advance(by d: Duration) { advance(to: now.advanced(by: d)) }

    public func advance(to instant: Instant) {
        let due = state.withLock { s -> [Sleeper] in
            if instant > s.now { s.now = instant }
            let due = s.sleepers.filter { $0.deadline <= s.now }
            s.sleepers.removeAll { $0.deadline <= s.now }
            return due
        }
        for s in due { s.wake.resume() }
    }

    /// Waits (yielding, not sleeping) until `count` tasks sleep on this clock.
    public func waitForSleepers(_ count: Int = 1) async {
        while sleepers < count { await Task.yield() }
    }
}

/// Polls `condition` (every 10 ms) until it holds or `timeout` passes; returns whether it
/// held. For waiting on a state with a generous bound, instead of sleeping and then checking.
public func waitUntil(within timeout: Duration = .seconds(30), _ condition: () async -> Bool) async -> Bool {
    let end = ContinuousClock.now + timeout
    while ContinuousClock.now < end {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return await condition()
}
