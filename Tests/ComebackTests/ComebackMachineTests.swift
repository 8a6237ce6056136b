import Comeback
import JanusTesting
import Testing

/// The comeback machine on instants alone: no clock, no sleeps.
@Suite struct ComebackMachineTests {
    struct Failure: Error, Equatable { let why: String }
    typealias Machine = ComebackMachine<ManualClock.Instant, Failure>
    static let t0 = ManualClock.Instant(offset: .zero)
    static func at(_ ms: Int) -> ManualClock.Instant { t0.advanced(by: .milliseconds(ms)) }

    /// 1 s doubling to 4 s, so the jittered waits are told apart by their bounds.
    static let backoff = Backoff(initial: .seconds(1), cap: .seconds(4))

    @Test func aLossTriesAtOnceThenWaitsWithJitteredBackoffUntilBack() throws {
        var m = Machine(ComebackPolicy(backoff: Self.backoff, deadline: .seconds(60)))
        #expect(m.handle(.lost(), at: Self.t0) == .tryNow(attempt: 1))
        #expect(m.handle(.lost(), at: Self.at(10)) == .none, "a second report of the same loss starts nothing")
        var now = Self.t0
        for (n, base) in [(2, 1000), (3, 2000), (4, 4000), (5, 4000)] {
            guard case .wait(let until) = m.handle(.failed(Failure(why: "\(n - 1)"), retryable: true), at: now) else {
                Issue.record("attempt \(n - 1) failed: expected a wait"); return
            }
            let wait = now.duration(to: until)
            #expect(wait >= .milliseconds(base / 2) && wait <= .milliseconds(base), "wait before attempt \(n): \(wait)")
            #expect(m.handle(.tick, at: now.advanced(by: wait / 2)) == .wait(until: until), "an early tick waits on")
            #expect(m.handle(.succeeded, at: now) == .none, "no attempt runs while waiting")
            #expect(m.handle(.tick, at: until) == .tryNow(attempt: n))
            now = until
        }
        #expect(m.handle(.succeeded, at: Self.at(20_000)) == .back(after: .seconds(20)))
        guard case .up(let since) = m.state else { Issue.record("not up: \(m.state)"); return }
        #expect(since == Self.at(20_000))
    }

    @Test func aFatalErrorGivesUpAtOnceWithIt() {
        var m = Machine(ComebackPolicy(deadline: .seconds(60)))
        #expect(m.handle(.lost(), at: Self.t0) == .tryNow(attempt: 1))
        #expect(m.handle(.failed(Failure(why: "refused"), retryable: false), at: Self.at(5)) == .giveUp(last: Failure(why: "refused")))
        #expect(m.handle(.lost(), at: Self.at(6)) == .none, "given up: a loss report changes nothing")
        #expect(m.handle(.tick, at: Self.at(7)) == .none)
    }

    @Test func theDeadlineCutsTheLastWaitAndGivesUpWithTheLastError() throws {
        var m = Machine(ComebackPolicy(backoff: Backoff(initial: .seconds(10), cap: .seconds(10)), deadline: .seconds(3)))
        // The outage began 1 s before the loss was reported: the deadline counts from then.
        #expect(m.handle(.lost(since: Self.t0), at: Self.at(1000)) == .tryNow(attempt: 1))
        #expect(m.handle(.failed(Failure(why: "away"), retryable: true), at: Self.at(1500)) == .wait(until: Self.at(3000)),
                "a 5–10 s wait is cut to the deadline")
        #expect(m.handle(.tick, at: Self.at(3000)) == .giveUp(last: Failure(why: "away")), "no attempt at the deadline")
        var late = Machine(ComebackPolicy(deadline: .seconds(3)))
        _ = late.handle(.lost(), at: Self.t0)
        #expect(late.handle(.failed(Failure(why: "slow"), retryable: true), at: Self.at(3000)) == .giveUp(last: Failure(why: "slow")),
                "an attempt that ends past the deadline gives up")
    }

    @Test func attemptsAreSpentAcrossLossesUntilTheMediaRunsStably() {
        var m = Machine(ComebackPolicy(backoff: Self.backoff, attempts: 2, stableAfter: .seconds(30)))
        #expect(m.handle(.lost(), at: Self.t0) == .tryNow(attempt: 1))
        #expect(m.handle(.succeeded, at: Self.at(100)) == .back(after: .milliseconds(100)))
        // Lost again 5 s later: not stable, so the second attempt comes after a wait and is the last.
        guard case .wait(let until) = m.handle(.lost(), at: Self.at(5100)) else { Issue.record("expected a wait"); return }
        #expect(m.handle(.tick, at: until) == .tryNow(attempt: 2))
        #expect(m.handle(.succeeded, at: until) != .none)
        #expect(m.handle(.lost(), at: until.advanced(by: .seconds(1))) == .giveUp(last: nil), "both attempts spent before this loss")
    }

    @Test func stableAfterRefillsTheBudgetAndTheBackoff() {
        var m = Machine(ComebackPolicy(backoff: Self.backoff, attempts: 2, stableAfter: .seconds(30)))
        _ = m.handle(.lost(), at: Self.t0)
        _ = m.handle(.succeeded, at: Self.at(100))
        #expect(m.spent == 1)
        #expect(m.handle(.stable, at: Self.at(10_000)) == .none, "up 10 s: not yet")
        #expect(m.handle(.stable, at: Self.at(30_100)) == .reset)
        #expect(m.spent == 0)
        #expect(m.handle(.lost(), at: Self.at(40_000)) == .tryNow(attempt: 1), "a full budget tries at once")
        // Up long enough is also seen at the loss itself, without a `.stable` before it.
        _ = m.handle(.succeeded, at: Self.at(40_000))
        #expect(m.handle(.lost(), at: Self.at(80_000)) == .tryNow(attempt: 1))
    }

    @Test func aNewMachineHasAFullBudgetAndOnlyTheRunningAttemptCanEnd() {
        var m = Machine(ComebackPolicy(attempts: 1, stableAfter: .seconds(30)))
        #expect(m.handle(.succeeded, at: Self.t0) == .none, "nothing was lost")
        #expect(m.handle(.failed(Failure(why: "x"), retryable: true), at: Self.t0) == .none)
        #expect(m.handle(.stable, at: Self.t0) == .none)
        #expect(m.handle(.lost(), at: Self.at(1)) == .tryNow(attempt: 1), "first started: a full budget, however short it ran")
        #expect(m.handle(.failed(Failure(why: "x"), retryable: true), at: Self.at(2)) == .giveUp(last: Failure(why: "x")))
    }
}
