@testable import Service
import Testing

/// The fence with a clock the test moves: a job stops writing `lease - margin` after the last
/// renewal that succeeded was sent, and never later, whatever happens in between.
@Suite struct LeaseFenceTests {
    struct Instant: InstantProtocol {
        var ms: Int64
        func advanced(by d: Duration) -> Instant { Instant(ms: ms + Int64(d.components.seconds * 1000 + d.components.attoseconds / 1_000_000_000_000_000)) }
        func duration(to other: Instant) -> Duration { .milliseconds(other.ms - ms) }
        static func < (a: Instant, b: Instant) -> Bool { a.ms < b.ms }
    }

    @Test("due at sent + lease - margin of the last successful renewal, once")
    func dueAfterLastRenewal() {
        var fence = LeaseFence<Instant>(lease: .seconds(4), margin: .milliseconds(1500))
        fence.renewed("a", sentAt: Instant(ms: 0))
        fence.renewed("b", sentAt: Instant(ms: 0))
        // Renewals of a at 1 s and 2 s succeed; b's fail.
        fence.renewed("a", sentAt: Instant(ms: 1000))
        fence.renewed("a", sentAt: Instant(ms: 2000))
        #expect(fence.due(at: Instant(ms: 2499)).isEmpty)
        #expect(fence.due(at: Instant(ms: 2500)) == ["b"])
        #expect(fence.due(at: Instant(ms: 2600)).isEmpty, "once")
        #expect(fence.deadline("a") == Instant(ms: 4500))
        #expect(fence.due(at: Instant(ms: 10_000)) == ["a"])
        #expect(fence.held.isEmpty)
    }

    @Test("a late answer to an older renewal never moves the deadline later than the newest one sent")
    func olderAnswerDoesNotExtend() {
        var fence = LeaseFence<Instant>(lease: .seconds(4), margin: .milliseconds(1500))
        fence.renewed("a", sentAt: Instant(ms: 3000))
        fence.renewed("a", sentAt: Instant(ms: 1000))
        #expect(fence.deadline("a") == Instant(ms: 5500))
        fence.forget("a")
        #expect(fence.deadline("a") == nil)
    }
}
