@testable import Service
import Spool
import Testing

/// The task queue's one retry policy with instants the test picks: no database, no sleep.
@Suite struct TaskPolicyTests {
    typealias Instant = LeaseFenceTests.Instant
    typealias Policy = TaskPolicy<Instant>

    /// 1 s doubling to 8 s, a webhook given up a minute after it was queued.
    let policy = Policy(schedule: RetrySchedule(first: .seconds(1), maximum: .seconds(8), giveUpAfter: .seconds(60)), hold: .seconds(10))
    static func at(_ ms: Int64) -> Instant { Instant(ms: ms) }
    static func claimed(_ kind: TaskKind = .webhook, attempts: Int = 0, created: Int64 = 0, until: Int64 = 10_000, gone: Int64? = nil) -> Policy.Claimed {
        Policy.Claimed(kind: kind, attempts: attempts, created: at(created), claimUntil: at(until), claimerGoneSince: gone.map(at))
    }

    @Test("a failed try is retried after the backoff (doubling to its cap), counted; a success completes; a file vanished is discarded")
    func backoff() {
        let now = Self.at(5000)
        #expect(policy.afterTry(.done, of: Self.claimed(attempts: 3), at: now, jitter: 1) == .complete)
        let waits = (0..<6).map { n -> Policy.Decision in policy.afterTry(.retry("503"), of: Self.claimed(attempts: n), at: now, jitter: 1) }
        #expect(waits == [1, 2, 4, 8, 8, 8].enumerated().map { n, s in .retry(at: Self.at(5000 + Int64(s) * 1000), attempts: n + 1, why: "503") })
        #expect(policy.afterTry(.retry("503"), of: Self.claimed(attempts: 0), at: now, jitter: 0.75) == .retry(at: Self.at(5750), attempts: 1, why: "503"))
        #expect(policy.afterTry(.giveUp("the file is gone"), of: Self.claimed(attempts: 2), at: now, jitter: 1)
                == .discard(attempts: 3, why: "the file is gone", expired: false))
    }

    @Test("a webhook whose time ran out is discarded at its next failure; no other kind expires")
    func expiry() {
        #expect(policy.afterTry(.retry("down"), of: Self.claimed(attempts: 4), at: Self.at(59_999), jitter: 1)
                == .retry(at: Self.at(67_999), attempts: 5, why: "down"))
        #expect(policy.afterTry(.retry("down"), of: Self.claimed(attempts: 4), at: Self.at(60_000), jitter: 1)
                == .discard(attempts: 5, why: "down", expired: true))
        #expect(policy.expires(.webhook))
        for kind in TaskKind.allCases where kind != .webhook {
            #expect(!policy.expires(kind), "\(kind)")
        }
    }

    @Test("a try cut short by a shutdown releases its task uncounted, unless it succeeded")
    func cancelled() {
        #expect(policy.afterTry(.retry("cancelled"), of: Self.claimed(attempts: 1), cancelled: true, at: Self.at(0), jitter: 1) == .release)
        #expect(policy.afterTry(.giveUp("?"), of: Self.claimed(), cancelled: true, at: Self.at(0), jitter: 1) == .release)
        #expect(policy.afterTry(.done, of: Self.claimed(), cancelled: true, at: Self.at(0), jitter: 1) == .complete)
    }

    @Test("the rescuer: a claim still held is kept; one run out, or whose claimer's session is gone, is released; past its time, discarded")
    func rescue() {
        #expect(policy.claimUntil(from: Self.at(1000)) == Self.at(11_000))
        #expect(policy.rescue(Self.claimed(until: 10_000), at: Self.at(10_000)) == .keep, "held to its end")
        #expect(policy.rescue(Self.claimed(until: 10_000), at: Self.at(10_001)) == .release)
        #expect(policy.rescue(Self.claimed(until: 10_000, gone: 500), at: Self.at(600)) == .release, "its claimer died: at once")
        #expect(policy.rescue(Self.claimed(attempts: 2, created: 0, until: 70_000, gone: 65_000), at: Self.at(66_000))
                == .discard(attempts: 2, why: "given up: its claimer went away after its time ran out", expired: true))
    }
}
