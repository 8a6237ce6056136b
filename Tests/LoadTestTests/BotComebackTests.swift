import Janus
import JanusTesting
@testable import LoadTest
import Synchronization
import Testing
import Locking

/// A load bot's comeback loop on a manual clock: retried until its deadline, no sleeps.
@Suite struct BotComebackTests {
    struct Refused: Error, CustomStringConvertible { let description = "refused" }

    @Test(.timeLimit(.minutes(1))) func triesUntilAnAttemptWorksThenReportsANewSession() async {
        let clock = ManualClock(), tries = Locked(0)
        let comeback = Task {
            await comeBack(on: clock, within: .seconds(30), reusing: nil) { session in
                #expect(session == nil, "nothing kept: every attempt opens its own session")
                let n = tries.withLock { $0 += 1; return $0 }
                if n < 3 { throw Refused() }
            }
        }
        for _ in 0..<2 {
            await clock.waitForSleepers()
            clock.advance(by: .seconds(5))  // past any backoff wait (at most 5 s)
        }
        guard case .back(let newSession) = await comeback.value else { Issue.record("not back"); return }
        #expect(newSession && tries.withLock { $0 } == 3)
    }

    @Test(.timeLimit(.minutes(1))) func givesUpAtTheDeadlineWithTheLastError() async {
        let clock = ManualClock(), tries = Locked(0)
        let comeback = Task {
            await comeBack(on: clock, within: .seconds(2), reusing: nil) { _ in
                tries.withLock { $0 += 1 }
                throw Refused()
            }
        }
        while clock.now.offset < .seconds(2) {
            await clock.waitForSleepers()
            clock.advance(by: .milliseconds(100))
        }
        guard case .gaveUp(let last) = await comeback.value else { Issue.record("did not give up"); return }
        #expect(last is Refused)
        // 0.1 s, doubling from there, each 0.5…1 of it, within 2 s: at least 4 attempts, at most 2 s / 50 ms.
        #expect((4...40).contains(tries.withLock { $0 }))
    }

    @Test(.timeLimit(.minutes(1))) func aCancelledComebackStops() async {
        let clock = ManualClock()
        let comeback = Task {
            await comeBack(on: clock, within: .seconds(30), reusing: nil) { _ in throw Refused() }
        }
        await clock.waitForSleepers()
        comeback.cancel()
        guard case .stopped = await comeback.value else { Issue.record("not stopped"); return }
    }
}
