@testable import Service
import Testing

/// The lifecycle's decisions with instants the test picks: no database, no clock, no sleep.
@Suite struct JobLifecycleTests {
    typealias Instant = LeaseFenceTests.Instant
    typealias Life = JobLifecycle<Instant>
    typealias Job = Life.Job

    let a = Life(instance: "a", grace: .milliseconds(1500))
    let b = Life(instance: "b", grace: .milliseconds(1500))
    static func at(_ ms: Int64) -> Instant { Instant(ms: ms) }
    static func step(_ t: Life.Transition, _ to: Life.State, owner: String? = nil, outcome: Life.Outcome? = nil, tell: String? = nil) -> Life.Decision {
        .apply(.init(transition: t, to: to, owner: owner, outcome: outcome, tell: tell))
    }
    /// Held by `owner` with a lease to 4 s.
    static func held(_ state: Life.State = .running, by owner: String = "a", gone: Int64? = nil) -> Job {
        Job(state: state, owner: owner, leaseUntil: at(4000), ownerGoneSince: gone.map(at))
    }

    @Test("a queued job is claimed running, or paused when its last owner published it paused")
    func claim() {
        #expect(a.decide(.claim, Job(state: .queued), at: Self.at(0)) == Self.step(.claim, .running))
        #expect(a.decide(.claim, Job(state: .queued, publishedPaused: true), at: Self.at(0)) == Self.step(.claim, .paused))
        for ended in [Life.State.uploading, .done, .failed] {
            #expect(a.decide(.claim, Job(state: ended), at: Self.at(0)) == .unchanged, "\(ended)")
        }
    }

    @Test("another's job is taken over once its lease ran out or its session has been gone for the grace, not before")
    func takeOver() {
        let job = Self.held(by: "a")
        #expect(b.decide(.claim, job, at: Self.at(3999)) == .unchanged)
        #expect(b.decide(.claim, job, at: Self.at(4001)) == Self.step(.takeOver, .running))
        let gone = Self.held(.paused, by: "a", gone: 1000)
        #expect(b.decide(.claim, gone, at: Self.at(2500)) == .unchanged, "the grace has not passed")
        #expect(b.decide(.claim, gone, at: Self.at(2501)) == Self.step(.takeOver, .paused), "taken up paused")
        // Its own, under a session that ended: taken again under the new one.
        #expect(a.decide(.claim, gone, at: Self.at(2501)) == Self.step(.takeOver, .paused))
    }

    @Test("the owner renews while it holds the job; a renewal that finds it gone stops the writing")
    func renew() {
        #expect(a.decide(.renew, Self.held(), at: Self.at(100)) == Self.step(.renew, .running, owner: "a"))
        #expect(a.decide(.renew, Self.held(.stopping), at: Self.at(100)) == Self.step(.renew, .stopping, owner: "a"))
        #expect(a.decide(.renew, Self.held(by: "b"), at: Self.at(100)) == .stopWriting("its lease is no longer this instance's"))
        #expect(a.decide(.renew, Job(state: .done, owner: "a"), at: Self.at(100)) == .stopWriting("its lease is no longer this instance's"))
    }

    @Test("the fence and a lost session stop the owner's writing and write nothing; others ignore them")
    func fence() {
        #expect(a.decide(.leaseLost, Self.held(), at: Self.at(2500)) == .stopWriting("its lease could not be renewed in time"))
        #expect(a.decide(.sessionLost, Self.held(.paused), at: Self.at(0)) == .stopWriting("this instance's database session ended"))
        #expect(b.decide(.leaseLost, Self.held(), at: Self.at(2500)) == .unchanged)
        #expect(b.decide(.sessionLost, Self.held(), at: Self.at(0)) == .unchanged)
    }

    @Test("a stop: a live owner is told; a job nobody writes is settled by whoever asked; an ended one is left")
    func stop() {
        #expect(b.decide(.stop, Self.held(by: "a"), at: Self.at(100)) == Self.step(.askStop, .stopping, owner: "a", tell: "a"))
        #expect(b.decide(.stop, Job(state: .queued), at: Self.at(100)) == Self.step(.settleStop, .done, outcome: .done))
        #expect(b.decide(.stop, Self.held(by: "a"), at: Self.at(4001)) == Self.step(.settleStop, .done, outcome: .done))
        var recording = Self.held(by: "a")
        recording.hasFolders = true
        #expect(b.decide(.stop, recording, at: Self.at(5000)) == Self.step(.settleStop, .uploading, outcome: .done), "its folders still go up")
        #expect(b.decide(.stop, Job(state: .done), at: Self.at(0)) == .unchanged)
        // Released while stopping (its owner shut down): the next claim settles it, as a DELETE would.
        #expect(a.decide(.release, Self.held(.stopping), at: Self.at(0)) == Self.step(.release, .stopping, owner: "a"))
        #expect(b.decide(.claim, Job(state: .stopping), at: Self.at(0)) == Self.step(.settleStop, .done, outcome: .done))
        #expect(b.decide(.claim, Self.held(.stopping), at: Self.at(100)) == .unchanged, "its owner finishes it")
    }

    @Test("pause and resume: the owner applies them; others are refused with why")
    func pause() {
        #expect(a.decide(.pause, Self.held(), at: Self.at(0)) == Self.step(.pause, .paused, owner: "a"))
        #expect(a.decide(.resume, Self.held(.paused), at: Self.at(0)) == Self.step(.resume, .running, owner: "a"))
        #expect(a.decide(.pause, Self.held(.paused), at: Self.at(0)) == .unchanged)
        #expect(b.decide(.pause, Self.held(), at: Self.at(0)) == .refused("it runs on a: the owner applies it"))
        #expect(b.decide(.pause, Self.held(), at: Self.at(4001)) == .refused("it has no running owner right now (being taken over): ask again in a few seconds"))
        #expect(b.decide(.resume, Job(state: .failed), at: Self.at(0)) == .refused("it has ended: it cannot be resumed"))
    }

    @Test("release at shutdown queues the owner's jobs, nobody else's")
    func release() {
        #expect(a.decide(.release, Self.held(.paused), at: Self.at(0)) == Self.step(.release, .queued, owner: "a"))
        #expect(b.decide(.release, Self.held(), at: Self.at(0)) == .unchanged)
    }

    @Test("the end: by its owner only, through uploading when it has folders; a retry after a lost answer changes nothing")
    func end() {
        #expect(a.decide(.end(.failed), Self.held(), at: Self.at(0)) == Self.step(.end, .failed, owner: "a", outcome: .failed))
        var recording = Self.held(.stopping)
        recording.hasFolders = true
        #expect(a.decide(.end(.done), recording, at: Self.at(0)) == Self.step(.end, .uploading, owner: "a", outcome: .done))
        #expect(b.decide(.end(.done), Self.held(), at: Self.at(0)) == .refused("it is no longer this instance's: its next owner writes its end"))
        #expect(a.decide(.retry(.done), Job(state: .done, owner: "a"), at: Self.at(0)) == .unchanged)
        #expect(a.decide(.retry(.done), Self.held(), at: Self.at(0)) == Self.step(.end, .done, owner: "a", outcome: .done))
        #expect(a.decide(.retry(.done), Self.held(by: "b"), at: Self.at(0)) == .refused("it is no longer this instance's: its next owner writes its end"))
        #expect(b.decide(.uploadsFinished, Job(state: .uploading, outcome: .failed), at: Self.at(0)) == Self.step(.finishUploads, .failed))
        #expect(b.decide(.uploadsFinished, Job(state: .done), at: Self.at(0)) == .unchanged)
    }

    @Test("every transition's target is reached only from the states its statement guards")
    func table() {
        let life = Life(instance: "a", grace: .seconds(1))
        let jobs: [Job] = Life.State.allCases.flatMap { state in
            [Job(state: state), Job(state: state, owner: "a", leaseUntil: Self.at(4000)), Job(state: state, owner: "b", leaseUntil: Self.at(1)),
             Job(state: state, owner: "a", leaseUntil: Self.at(4000), hasFolders: true, outcome: .failed)]
        }
        let events: [Life.Event] = [.claim, .renew, .leaseLost, .sessionLost, .stop, .pause, .resume, .release, .end(.done), .retry(.failed), .uploadsFinished]
        var seen = Set<Life.Transition>()
        for job in jobs {
            for event in events {
                guard case .apply(let step) = life.decide(event, job, at: Self.at(100)) else { continue }
                seen.insert(step.transition)
                #expect(step.transition.from.contains(job.state), "\(event) from \(job.state) decided \(step.transition), whose statement would not match")
            }
        }
        #expect(seen == Set(Life.Transition.allCases), "every transition is decided by some event")
    }
}
