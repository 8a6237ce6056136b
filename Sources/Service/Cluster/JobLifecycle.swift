/// One job's lifecycle across the cluster as a value: told what happened to a job (as the
/// database holds it, seen by one instance at one instant), it answers what to do: which
/// guarded transition of `jobs.state` to apply, or that this instance must stop writing, or
/// nothing, or why not. No I/O, no clock of its own (the caller passes `now`), so every case
/// is tested with instants alone (`JobLifecycleTests`); `ClusterStore` applies what it decides,
/// each transition one `UPDATE … WHERE state = ANY(from)` (docs/cluster.md, the diagram).
public struct JobLifecycle<Instant: InstantProtocol>: Sendable where Instant.Duration == Duration, Instant: Sendable {
    /// `jobs.state` (the PostgreSQL enum `job_state`, migration step 6).
    public enum State: String, Sendable, CaseIterable {
        /// Waiting for an instance with room: new, or released by one that shut down.
        case queued
        /// Held under a lease by its owner, recording or playing.
        case running
        /// Held by its owner, frames dropped until resumed.
        case paused
        /// A DELETE asked its end; the owner finishes its files (no owner: settled by anyone).
        case stopping
        /// Ended; a recording's folders are on their way to the store.
        case uploading
        case done, failed

        public var isEnded: Bool { self == .uploading || self == .done || self == .failed }
        /// An owner writes it.
        public var isHeld: Bool { self == .running || self == .paused || self == .stopping }
    }

    /// How a job ended (the API's `done` / `failed`, `jobs.final_state`).
    public enum Outcome: String, Sendable { case done, failed }

    /// A job as the database holds it.
    public struct Job: Sendable, Equatable {
        public var state: State
        public var owner: String?
        /// When its owner's lease ends (nil: no owner).
        public var leaseUntil: Instant?
        /// When its owner's database session was first seen gone (nil: alive, or no owner).
        public var ownerGoneSince: Instant?
        /// A recording with a folder noted: its end waits for the folders' uploads.
        public var hasFolders = false
        /// Paused as its owner last published: a job taken up is taken up paused.
        public var publishedPaused = false
        /// Its outcome once ended (`final_state`).
        public var outcome: Outcome?

        public init(state: State, owner: String? = nil, leaseUntil: Instant? = nil, ownerGoneSince: Instant? = nil,
                    hasFolders: Bool = false, publishedPaused: Bool = false, outcome: Outcome? = nil) {
            self.state = state
            self.outcome = outcome
            self.owner = owner
            self.leaseUntil = leaseUntil
            self.ownerGoneSince = ownerGoneSince
            self.hasFolders = hasFolders
            self.publishedPaused = publishedPaused
        }
    }

    public enum Event: Sendable, Equatable {
        /// This instance has room and looks for work.
        case claim
        /// This instance renews its lease of the job.
        case renew
        /// The fence: this instance could not renew in time (`LeaseFence`).
        case leaseLost
        /// This instance's own database session ended (`ClusterLiveness`).
        case sessionLost
        /// A DELETE, on any instance.
        case stop
        case pause, resume
        /// This instance shuts down: its jobs are free for the others at once.
        case release
        /// The job this instance runs ended.
        case end(Outcome)
        /// The end could not be written; written again.
        case retry(Outcome)
        /// Every file of an ended recording is settled, its merged manifest with them.
        case uploadsFinished
    }

    /// The transitions, each one guarded statement of `ClusterStore`.
    public enum Transition: String, Sendable, CaseIterable {
        case claim, takeOver, renew, pause, resume, askStop, settleStop, release, end, finishUploads

        /// The states it applies from (the `WHERE state = ANY(…)` of its statement).
        public var from: [State] {
            switch self {
            case .claim: [.queued]
            case .takeOver: [.running, .paused]
            case .renew, .release: [.running, .paused, .stopping]
            case .pause: [.running]
            case .resume: [.paused]
            case .askStop: [.running, .paused, .stopping]
            case .settleStop: [.queued, .running, .paused, .stopping]
            case .end: [.running, .paused, .stopping]
            case .finishUploads: [.uploading]
            }
        }
    }

    /// One guarded transition: from any of `transition.from` to `to`.
    public struct Step: Sendable, Equatable {
        public var transition: Transition
        public var to: State
        /// The owner that must still hold the job (its `AND owner = …`); nil: anyone.
        public var owner: String?
        /// Its outcome, for an end.
        public var outcome: Outcome?
        /// A DELETE passed on: the owner to tell.
        public var tell: String?
    }

    public enum Decision: Sendable, Equatable {
        case apply(Step)
        /// This instance must stop writing the job now; nothing is written (its next owner
        /// carries on once the lease has run out or the session is seen gone).
        case stopWriting(String)
        /// Nothing to do (a second report, a job not ready).
        case unchanged
        /// Not possible, and why (the API's 409 or 503).
        case refused(String)
    }

    /// The instance deciding.
    public let instance: String
    /// How long an owner's session must have been seen gone before its jobs are taken.
    public let grace: Duration

    public init(instance: String, grace: Duration) {
        self.instance = instance
        self.grace = grace
    }

    /// Its owner can no longer be writing it at `now`: the lease ran out, or the owner's
    /// session has been gone for the grace.
    public func orphaned(_ job: Job, at now: Instant) -> Bool {
        guard job.state.isHeld else { return false }
        if job.owner == nil { return true }
        if let until = job.leaseUntil, until < now { return true }
        if let gone = job.ownerGoneSince, gone.advanced(by: grace) < now { return true }
        return false
    }

    public func decide(_ event: Event, _ job: Job, at now: Instant) -> Decision {
        let mine = job.owner == instance && job.state.isHeld
        switch event {
        case .claim:
            if job.state == .queued { return apply(.claim, to: job.publishedPaused ? .paused : .running) }
            // Asked to stop, and nobody finishes it: ended here, as a DELETE of it would be.
            if job.state == .stopping, orphaned(job, at: now) { return settle(job) }
            // Its own job too: an instance whose session ended takes it again under its new one.
            guard job.state == .running || job.state == .paused, orphaned(job, at: now) else { return .unchanged }
            return apply(.takeOver, to: job.state)
        case .renew:
            guard mine else { return .stopWriting("its lease is no longer this instance's") }
            return apply(.renew, to: job.state, owner: instance)
        case .leaseLost:
            return mine ? .stopWriting("its lease could not be renewed in time") : .unchanged
        case .sessionLost:
            return mine ? .stopWriting("this instance's database session ended") : .unchanged
        case .stop:
            if job.state.isEnded { return .unchanged }
            if job.state == .queued || orphaned(job, at: now) { return settle(job) }
            guard let owner = job.owner else { return settle(job) }
            var step = Step(transition: .askStop, to: .stopping, owner: owner)
            step.tell = owner
            return .apply(step)
        case .pause, .resume:
            let paused = event == .pause
            if job.state.isEnded { return .refused("it has ended: it cannot be \(paused ? "paused" : "resumed")") }
            guard job.state.isHeld, !orphaned(job, at: now) else {
                return .refused("it has no running owner right now (being taken over): ask again in a few seconds")
            }
            if job.state == .stopping { return .refused("it is stopping") }
            if job.state == (paused ? .paused : .running) { return .unchanged }
            guard mine else { return .refused("it runs on \(job.owner ?? "?"): the owner applies it") }
            return apply(paused ? .pause : .resume, to: paused ? .paused : .running, owner: instance)
        case .release:
            guard mine else { return .unchanged }
            // A job asked to stop stays so, with no owner: the next claim settles it.
            return apply(.release, to: job.state == .stopping ? .stopping : .queued, owner: instance)
        case .end(let outcome):
            guard mine else { return .refused("it is no longer this instance's: its next owner writes its end") }
            return apply(.end, to: job.hasFolders ? .uploading : State(outcome), owner: instance, outcome: outcome)
        case .retry(let outcome):
            // The earlier attempt was written after all (its answer was lost).
            if job.state.isEnded, job.owner == instance { return .unchanged }
            return decide(.end(outcome), job, at: now)
        case .uploadsFinished:
            guard job.state == .uploading else { return .unchanged }
            return apply(.finishUploads, to: State(job.outcome ?? .done))
        }
    }

    /// Ended by whoever asks: a stop of a job that nobody writes.
    private func settle(_ job: Job) -> Decision {
        apply(.settleStop, to: job.hasFolders ? .uploading : .done, outcome: .done)
    }

    private func apply(_ t: Transition, to: State, owner: String? = nil, outcome: Outcome? = nil) -> Decision {
        .apply(Step(transition: t, to: to, owner: owner, outcome: outcome))
    }
}

extension JobLifecycle.State {
    public init(_ outcome: JobLifecycle.Outcome) { self = outcome == .done ? .done : .failed }
}
