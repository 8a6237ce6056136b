import Comeback
import Testing

/// The one backoff: its doubling and cap, its jitter, and the shapes the call sites had before
/// they shared it (the same waits, now from one type).
@Suite struct BackoffTests {
    @Test func doublesToItsCapWithJitterAndResets() {
        var b = Backoff(initial: .milliseconds(100), cap: .seconds(1))
        for base in [100, 200, 400, 800, 1000, 1000] {
            let w = b.nextDelay()
            #expect(w >= .milliseconds(base / 2) && w <= .milliseconds(base), "\(w) outside \(base / 2)…\(base) ms")
        }
        #expect(b.failures == 6)
        b.reset()
        #expect(b.failures == 0)
        #expect(b.nextDelay() <= .milliseconds(100))
    }

    @Test func aSeedRepeatsTheJitterAndAnotherSeedDoesNot() {
        var a = Backoff(initial: .seconds(1), cap: .seconds(30), seed: 42), b = a
        let first = (0..<8).map { _ in a.nextDelay() }
        #expect(first == (0..<8).map { _ in b.nextDelay() })
        var c = Backoff(initial: .seconds(1), cap: .seconds(30), seed: 43)
        #expect(first != (0..<8).map { _ in c.nextDelay() })
        // Jittered, not just the bases: at least one wait is below its base.
        #expect(zip(first, 0...).contains { $0 < a.base(afterFailures: $1) })
    }

    @Test func withoutJitterItGivesTheTURNPausesExactly() {
        // RoomRecording+Peers and Player paused `min(30_000, 500 << min(n, 6))` ms after n refusals.
        var turn = Backoff(initial: .milliseconds(500), cap: .seconds(30), jitter: 1...1)
        for n in 0..<12 {
            let old = Duration.milliseconds(min(30_000, 500 << min(n, 6)))
            #expect(turn.delay(afterFailures: n) == old, "after \(n) failures")
            #expect(turn.nextDelay() == old)
        }
    }

    @Test func theLoadRunsJoinRetryKeepsItsBoundsAndIsJittered() {
        // LoadRun waited `min(30, 1 << attempt)` s, unjittered; now that is the upper bound.
        let retry = Backoff(initial: .seconds(1), cap: .seconds(30), seed: 1)
        var g = SplitMix64(state: 7)
        for n in 0..<10 {
            let old = Duration.seconds(min(30, 1 << n))
            #expect(retry.base(afterFailures: n) == old)
            let w = retry.delay(afterFailures: n, using: &g)
            #expect(w >= old / 2 && w <= old)
        }
    }

    @Test func theSpoolsScheduleByCountMatchesItsOldFormula() {
        // Spool's RetrySchedule: `first × 2^(attempts-1)`, at most `maximum`, times 0.75…1.
        let spool = Backoff(initial: .seconds(5), cap: .seconds(60), jitter: 0.75...1)
        #expect((0..<6).map { spool.base(afterFailures: $0) } == [.seconds(5), .seconds(10), .seconds(20), .seconds(40), .seconds(60), .seconds(60)])
        for n in 0..<20 {
            let w = spool.delay(afterFailures: n)
            #expect(w >= spool.base(afterFailures: n) * 0.75 && w <= spool.base(afterFailures: n))
        }
    }

    @Test func farPastTheCapItNeitherOverflowsNorGoesBelowInitial() {
        let b = Backoff(initial: .milliseconds(100), cap: .seconds(5))
        #expect(b.base(afterFailures: 10_000) == .seconds(5))
        #expect(b.base(afterFailures: Int.max) == .seconds(5))
        #expect(b.base(afterFailures: -3) == .milliseconds(100))
    }
}
