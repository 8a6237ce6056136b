@testable import Bot
import Testing

/// The gap a resumed recording shows for the time it was away says how the job came back, as
/// serve knows it (issue 44: jobs that merely failed over, or whose own instance lost its
/// database session, said "process restarted").
@Suite struct AwayCauseTests {
    @Test("a restart, a failover, a release, and this instance taking its own job back each say so")
    func eachWayBackIsNamed() {
        #expect(Recorder.awayCause(takeover: nil, instance: nil) == "the recorder was not running (process restarted)")
        let failover = Recorder.awayCause(takeover: ("failover", "a"), instance: "b")
        #expect(failover == "taken over from a, whose lease ran out or database session ended")
        let released = Recorder.awayCause(takeover: ("released", "a"), instance: "b")
        #expect(released == "released by a as it shut down, taken up here")
        let own = Recorder.awayCause(takeover: ("failover", "b"), instance: "b")
        #expect(own.contains("this instance stopped writing") && !own.contains("restarted"))
    }
}
