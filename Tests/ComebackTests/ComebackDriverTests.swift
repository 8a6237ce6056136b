import Comeback
import JanusTesting
import Testing

/// The one comeback loop on a manual clock: its waits are the machine's (seeded, so exact),
/// it stops when not wanted, and it runs on its caller's actor. No test sleeps.
@Suite(.timeLimit(.minutes(1))) struct ComebackDriverTests {
    struct Failure: Error, Equatable { let why: String }
    typealias Machine = ComebackMachine<ManualClock.Instant, Failure>

    /// 1 s doubling to 4 s, seeded: a twin made from it predicts every wait exactly.
    static let backoff = Backoff(initial: .seconds(1), cap: .seconds(4), seed: 2026)

    @Test func theWaitsAreTheBackoffsOnTheGivenClock() async {
        let clock = ManualClock(), tries = Counter()
        var twin = Self.backoff
        let driver = Task {
            var m = Machine(ComebackPolicy(backoff: Self.backoff, deadline: .seconds(60)))
            let first = m.handle(.lost(), at: clock.now)
            return await m.run(from: first, on: clock, isWorthRetrying: { _ in true }) { (n: Int) async throws(Failure) -> Int in
                await tries.add()
                guard n == 3 else { throw Failure(why: "not yet") }
                return n
            }
        }
        // Attempt 1 at the loss, then one wait per failure, each the backoff's next delay.
        for n in 1...2 {
            await clock.waitForSleepers()
            let due = clock.now.advanced(by: twin.nextDelay())
            #expect(clock.nextDeadline == due, "wait \(n)")
            #expect(await tries.value == n)
            clock.advance(to: due)
        }
        guard case .back(let value, let attempt) = await driver.value else { Issue.record("not back"); return }
        #expect(value == 3 && attempt == 3)
        #expect(await tries.value == 3)
    }

    @Test func itGivesUpAtTheDeadlineAndStopsWhenCancelled() async {
        let clock = ManualClock()
        let driver = Task {
            var m = Machine(ComebackPolicy(backoff: Self.backoff, deadline: .seconds(3)))
            let first = m.handle(.lost(), at: clock.now)
            return await m.run(from: first, on: clock, isWorthRetrying: { _ in true }) { (_: Int) async throws(Failure) in
                throw Failure(why: "away")
            }
        }
        await clock.waitForSleepers()
        clock.advance(by: .seconds(2))  // past the first wait (0.5–1 s): attempt 2, then a wait cut to 3 s
        await clock.waitForSleepers()
        #expect(clock.nextDeadline == ManualClock.Instant(offset: .seconds(3)))
        clock.advance(by: .seconds(10))
        guard case .gaveUp(let last, let attempts) = await driver.value else { Issue.record("did not give up"); return }
        #expect(last == Failure(why: "away") && attempts == 2)

        let stopped = Task {
            var m = Machine(ComebackPolicy(backoff: Self.backoff, deadline: .seconds(60)))
            let first = m.handle(.lost(), at: clock.now)
            return await m.run(from: first, on: clock, isWorthRetrying: { _ in true }) { (_: Int) async throws(Failure) in
                throw Failure(why: "away")
            }
        }
        await clock.waitForSleepers()
        stopped.cancel()
        guard case .stopped = await stopped.value else { Issue.record("not stopped"); return }
    }

    @Test func whatNoWaitHealsEndsItAtOnce() async {
        let clock = ManualClock()
        var m = Machine(ComebackPolicy(backoff: Self.backoff, deadline: .seconds(60)))
        let first = m.handle(.lost(), at: clock.now)
        let outcome = await m.run(from: first, on: clock, isWorthRetrying: { $0.why != "refused" }) { (_: Int) async throws(Failure) in
            throw Failure(why: "refused")
        }
        guard case .gaveUp(let last, let attempts) = outcome else { Issue.record("did not give up"); return }
        #expect(last == Failure(why: "refused") && attempts == 1)
        #expect(clock.sleepers == 0)
    }

    @Test func notWantedBeforeAnAttemptOrAfterAFailureStopsWithoutTryingOrWaiting() async {
        let clock = ManualClock(), tries = Counter()
        var m = Machine(ComebackPolicy(backoff: Self.backoff))
        let first = m.handle(.lost(), at: clock.now)
        let outcome = await m.run(from: first, on: clock, stillWanted: { false },
                                  isWorthRetrying: { _ in true }) { (_: Int) async throws(Failure) in await tries.add() }
        guard case .stopped = outcome else { Issue.record("not stopped"); return }
        #expect(await tries.value == 0)

        // Wanted for the attempt, no longer once it failed: no wait follows.
        let asked = Counter()
        var n = Machine(ComebackPolicy(backoff: Self.backoff))
        let firstOfN = n.handle(.lost(), at: clock.now)
        let second = await n.run(from: firstOfN, on: clock, stillWanted: { await asked.add() == 1 },
                                 isWorthRetrying: { _ in true }) { (_: Int) async throws(Failure) in throw Failure(why: "x") }
        guard case .stopped = second else { Issue.record("not stopped"); return }
        #expect(await asked.value == 2 && clock.sleepers == 0)
    }

    /// The agent's shape: the machine lives elsewhere (`step`), the attempt tells it of the
    /// success itself, and a nil answer means the comeback ended elsewhere.
    @Test func aMachineHeldElsewhereIsDrivenThroughStep() async {
        let clock = ManualClock(), held = Held(Machine(ComebackPolicy(backoff: Self.backoff, attempts: 3)))
        let first = await held.handle(.lost(), at: clock.now)
        let driver = Task {
            await held.comeBack(from: first, on: clock, succeedOn: 2)
        }
        await clock.waitForSleepers()
        clock.advance(by: .seconds(1))
        guard case .back(_, let attempt) = await driver.value else { Issue.record("not back"); return }
        #expect(attempt == 2)
        #expect(await held.steps == [".failed", ".tick"], "the success was told by the attempt, not by the driver a second time")

        // Ended elsewhere while it waited: the tick finds no machine, the loop stops.
        _ = await held.handle(.lost(), at: clock.now)
        await held.forget()
        let again = Task { await held.comeBack(from: .wait(until: clock.now.advanced(by: .seconds(1))), on: clock, succeedOn: 1) }
        await clock.waitForSleepers()
        clock.advance(by: .seconds(1))
        guard case .stopped = await again.value else { Issue.record("not stopped"); return }
    }

    actor Held {
        var machine: Machine?
        var steps: [String] = []
        init(_ m: Machine) { machine = m }
        func forget() { machine = nil }

        func handle(_ e: Machine.Event, at now: ManualClock.Instant) -> Machine.Action {
            machine?.handle(e, at: now) ?? .none
        }

        /// Runs on this actor: `step` and the attempt touch its state without an await.
        func comeBack(from first: Machine.Action, on clock: ManualClock, succeedOn: Int) async -> ComebackOutcome<Void, Failure> {
            steps = []
            return await ComebackDriver(clock: clock).run(from: first, step: { e, now in
                guard self.machine != nil else { return nil }
                if case .succeeded = e { return nil }  // told by the attempt already
                self.steps.append(e.name)
                return self.machine?.handle(e, at: now)
            }, isWorthRetrying: { _ in true }) { (n: Int) async throws(Failure) in
                guard n == succeedOn else { throw Failure(why: "not yet") }
                _ = self.machine?.handle(.succeeded, at: clock.now)
            }
        }
    }

    actor Counter {
        var value = 0
        @discardableResult func add() -> Int {
            value += 1
            return value
        }
    }
}

extension ComebackMachine.Event {
    var name: String {
        switch self {
        case .lost: ".lost"
        case .tick: ".tick"
        case .succeeded: ".succeeded"
        case .failed: ".failed"
        case .stable: ".stable"
        }
    }
}
