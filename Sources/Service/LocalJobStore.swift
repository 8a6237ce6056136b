import Bot
import Foundation
import Logging

/// One instance's jobs (no `--database`): its memory and the state folder (`JobStore`, written
/// off the pool by `JobStoreWriter`; no folder: memory only), with the cluster's states and
/// decisions. Each record names its `JobLifecycle` state, and start, stop, pause and end are
/// decided by the reducer PostgreSQL's rows go through, this instance the owner of every job
/// and the process before it an owner gone: at start a `running` or `paused` record is taken
/// over (resumed), a `stopping` one settled (`done`), as another instance would in a cluster.
struct LocalJobStore: JobStoreBackend {
    typealias Lifecycle = JobLifecycle<ContinuousClock.Instant>
    /// This instance as the lifecycle's owner (never shown: one instance names no owner).
    static let instance = "local"

    let writer: JobStoreWriter?
    let log: Logger
    var owner: String? { nil }
    let lifecycle = Lifecycle(instance: instance, grace: .zero)

    init(stateDirectory: URL?, log: Logger) throws(ServeError) {
        self.log = log
        writer = try stateDirectory.map { dir throws(ServeError) in JobStoreWriter(store: try JobStore(stateDirectory: dir), log: log) }
    }

    /// What start does with each record kept: the lifecycle's `claim` of a job whose owner (the
    /// process before this one) is gone. Ended ones are `unchanged` (listed).
    func plan(_ records: [JobStore.Record]) -> [(record: JobStore.Record, decision: Lifecycle.Decision)] {
        records.map { record in
            let job = Lifecycle.Job(state: record.lifecycleState, publishedPaused: record.pauses?.last.map { $0.end == nil } ?? false,
                                    outcome: record.outcome.map { $0.state == .failed ? .failed : .done })
            return (record, lifecycle.decide(.claim, job, at: .now))
        }
    }

    func start(in manager: isolated JobManager) async -> Task<Void, Never>? {
        guard let writer else { return nil }
        let planned = plan(await writer.load())
        let running = planned.filter { if case .apply(let step) = $0.decision { step.transition != .settleStop } else { false } }.count
        if running > manager.config.maxJobs {
            // Admitted before the restart: each is resumed (a recording is never dropped to fit);
            // new requests get 429 until enough of them end.
            log.warning("resuming \(running) job(s), more than --max-jobs \(manager.config.maxJobs): new jobs are refused until they end")
        }
        for (record, decision) in planned where manager.jobs[record.id] == nil {
            guard case .apply(let step) = decision else {
                manager.remember(record)
                continue
            }
            if step.transition == .settleStop {
                // Asked to stop (DELETE) before the process ended: the stop is kept, not undone.
                log.info("job \(record.id): asked to stop and no process writes it: ended (done)")
                let job = Job(id: record.id, spec: record.spec, created: record.created, resumes: record.resumes, live: LiveStatus(), sent: nil)
                let outcome = Job.Outcome(state: .done, ended: Date(), error: nil)
                manager.finish(job, outcome)
                manager.publishEnded(job, outcome)
                continue
            }
            await manager.takeUp(record)
        }
        return nil
    }

    func shutdown(stopped: [String], in manager: isolated JobManager) async {
        // Jobs stopped by the shutdown stay `running` on disk: the next start takes them over.
        await writer?.flush()
    }

    func checkRoom(in manager: isolated JobManager) throws(RequestProblem) {
        guard manager.freeCapacity > 0 else {
            throw RequestProblem(status: 429, message: "the service runs \(manager.config.maxJobs) jobs (--max-jobs): try again once one has ended")
        }
    }

    func held(in manager: isolated JobManager) async throws(RequestProblem) -> [HeldPaths] { [] }

    /// Claimed at once (`claim`: this instance had room, `checkRoom`).
    func admit(_ new: Admission, in manager: isolated JobManager) async throws(RequestProblem) -> JobStatus {
        let p = new.prepared
        let job = try manager.launch(id: new.id, spec: new.paths.canonicalSpec(new.spec, roots: manager.config.roots), protection: p.protection,
                                     media: p.media, outputs: p.outputs, created: Date(), resumes: 0)
        return JobStatus(job)
    }

    func status(of id: String, in manager: isolated JobManager) async throws(RequestProblem) -> JobStatus {
        guard let job = manager.jobs[id] else { throw RequestProblem(status: 404, message: "no job \(id)") }
        return JobStatus(job, uploads: manager.config.publishing?.uploads(of: id))
    }

    /// `askStop` (its owner is this instance): `stopping` on disk before its files are finished,
    /// so a crash meanwhile does not undo the stop (the next start settles it).
    func stopping(_ job: Job, in manager: isolated JobManager) {
        guard case .apply(let step) = job.decided(.stop), step.transition == .askStop else { return }
        writer?.save(JobStore.Record(job, state: step.to))
    }

    /// Alone, a job not running here has ended (`unchanged`).
    func stopElsewhere(_ id: String, in manager: isolated JobManager) async throws(RequestProblem) -> JobStatus {
        guard let job = manager.jobs[id] else { throw RequestProblem(status: 404, message: "no job \(id)") }
        return JobStatus(job)
    }

    /// Answered once on disk: a crash right after must not undo what was answered.
    func pauseKept(_ job: Job, _ paused: Bool, in manager: isolated JobManager) async throws(RequestProblem) {
        await writer?.flush()
    }

    func setPausedElsewhere(_ id: String, _ paused: Bool, in manager: isolated JobManager) async throws(RequestProblem) -> JobStatus {
        guard manager.jobs[id] != nil else { throw RequestProblem(status: 404, message: "no job \(id)") }
        throw JobManager.cannotPause(id, paused)
    }

    func refuseKeys(_ id: String, kind: JobSpec.Kind, in manager: isolated JobManager) async -> RequestProblem {
        guard let job = manager.jobs[id], job.spec.kind == kind else { return RequestProblem(status: 404, message: "no \(kind.rawValue) \(id)") }
        guard job.isActive, !job.stopRequested else { return JobManager.ended(id) }
        return JobManager.notIndexed(id, job.spec)
    }

    func abandonUploads(_ id: String, body: Data, in manager: isolated JobManager) async throws(RequestProblem) -> JobStatus {
        throw RequestProblem(status: 409, message: "no recording waits for an owner's folder without --database and --storage")
    }

    /// Its state as the lifecycle names it (an end: `done` or `failed`).
    func persist(_ job: Job, in manager: isolated JobManager) {
        writer?.save(JobStore.Record(job, state: job.lifecycleState))
    }

    func page(_ kind: JobSpec.Kind, limit: Int, after: String?, in manager: isolated JobManager) async throws(RequestProblem) -> (jobs: [JobStatus], next: String?) {
        let ofKind = manager.order.compactMap { manager.jobs[$0] }.filter { $0.spec.kind == kind }
        var start = 0
        if let after {
            guard let i = ofKind.firstIndex(where: { $0.id == after }) else {
                throw .field("after", "no \(kind.rawValue) \(after) (give the id of the last job of the page before)")
            }
            start = i + 1
        }
        let slice = ofKind[start...].prefix(limit)
        let next = start + slice.count < ofKind.count ? slice.last?.id : nil
        return (slice.map(JobStatus.init), next)
    }

    func prune(before cutoff: Date, here: [String]) async {
        for id in here { writer?.remove(id) }
    }
}

extension Job {
    /// Its `JobLifecycle` state: ended, asked to stop, paused, or running.
    var lifecycleState: LocalJobStore.Lifecycle.State {
        if let outcome { return outcome.state == .failed ? .failed : .done }
        if stopRequested { return .stopping }
        return pause?.isPaused == true ? .paused : .running
    }

    /// `event` decided for this job by the instance running it (its owner), with the reducer
    /// the stores apply: the same refusals and no-ops alone and in a cluster.
    func decided(_ event: LocalJobStore.Lifecycle.Event) -> LocalJobStore.Lifecycle.Decision {
        let here = LocalJobStore.instance
        let job = LocalJobStore.Lifecycle.Job(state: lifecycleState, owner: here, outcome: outcome.map { $0.state == .failed ? .failed : .done })
        return LocalJobStore.Lifecycle(instance: here, grace: .zero).decide(event, job, at: .now)
    }
}

extension JobStore.Record {
    init(_ job: Job, state: LocalJobStore.Lifecycle.State) {
        self.init(id: job.id, spec: job.spec, created: job.created, resumes: job.resumes, outcome: job.outcome, pauses: job.pause?.all, state: state.rawValue)
    }

    /// The state it names; a record of an older version names none: ended, or running.
    var lifecycleState: LocalJobStore.Lifecycle.State {
        if let outcome { return outcome.state == .failed ? .failed : .done }
        guard let named = state.flatMap(LocalJobStore.Lifecycle.State.init(rawValue:)), !named.isEnded else { return .running }
        return named
    }
}
