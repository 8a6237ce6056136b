import Bot
import Foundation
import Logging
import PostgresNIO

/// The API with `--database`: any instance answers for any job, from the database; the owner
/// answers its own jobs from memory (fresher), with their owners from the database.
extension JobManager {
    static func unreachable(_ error: any Error) -> RequestProblem {
        RequestProblem(status: 503, message: "the job database cannot be reached (\(String(reflecting: error).prefix(200))): try again shortly")
    }

    /// A new job, written for whichever instance has room to take (this one first, if it can).
    func enqueue(id: String, spec: JobSpec, _ store: ClusterStore) async throws(RequestProblem) -> JobStatus {
        do { try await store.insert(id: id, spec: spec, created: Date()) } catch {
            if let full = error as? ClusterStore.Full {
                throw RequestProblem(status: 429, message: "every instance runs its --max-jobs (\(full.capacity) jobs in all, waiting ones counted): try again once one has ended")
            }
            if let e = error as? PSQLError, e.serverInfo?[.sqlState] == "23505" {
                throw RequestProblem(status: 409, message: "\(spec.out ?? "its folder") is already being recorded into by another job")
            }
            throw Self.unreachable(error)
        }
        log.info("job \(id): \(spec.kind.rawValue) of room \(spec.room) queued for an instance with room")
        // Its paths are in the database now; the reservation would keep this instance from taking it.
        reserved[id] = nil
        await claimAvailable(store)
        return try await clusterStatus(id, store)
    }

    /// Active jobs' folders across the cluster, for the overlap check.
    func clusterHeld(_ store: ClusterStore) async throws(RequestProblem) -> [(String, Int64?, [String])] {
        // Stored relative to the roots (older rows: absolute), compared as this instance resolves them.
        let root = config.roots.output
        func here(_ path: String) -> String { (try? root.components(path, field: "out")).map(root.canonical) ?? path }
        do { return try await store.activePaths().map { ($0.id, Optional($0.room), $0.paths.map(here)) } } catch { throw Self.unreachable(error) }
    }

    func clusterStatus(_ id: String, _ store: ClusterStore) async throws(RequestProblem) -> JobStatus {
        let row: ClusterStore.Row?
        do { row = try await store.row(id) } catch {
            guard let job = jobs[id] else { throw Self.unreachable(error) }
            return Self.shownUnreachable(job, fenced: fenced.contains(id), instance: store.instance)
        }
        guard let row else { throw RequestProblem(status: 404, message: "no job \(id)") }
        var status = shown(row, store)
        status.owners = try? await store.owners([id])[id]
        // The table, kept by whichever instance uploads; this instance's view if it cannot be read.
        status.uploads = (try? await store.uploads(of: id)) ?? config.publishing?.uploads(of: id)
        return status
    }

    func clusterPage(_ kind: JobSpec.Kind, limit: Int, after: String?, _ store: ClusterStore) async throws(RequestProblem) -> (jobs: [JobStatus], next: String?) {
        let found: (rows: [ClusterStore.Row], more: Bool)?
        let owners: [String: [JobStatus.Owner]]
        do {
            found = try await store.page(kind, limit: limit, after: after)
            owners = try await store.owners(found?.rows.map(\.id) ?? [])
        } catch { throw Self.unreachable(error) }
        guard let found else { throw .field("after", "no \(kind.rawValue) \(after ?? "") (give the id of the last job of the page before)") }
        let statuses = found.rows.map { row in
            var status = shown(row, store)
            status.owners = owners[row.id]
            return status
        }
        return (statuses, found.more ? found.rows.last?.id : nil)
    }

    /// DELETE of a job not running here: its owner is told (NOTIFY) and the answer waits for
    /// its outcome; one nobody runs is settled here.
    func clusterStop(_ id: String, _ store: ClusterStore) async throws(RequestProblem) -> JobStatus {
        let asked: ClusterStore.StopAsked
        do { asked = try await store.requestStop(id, grace: clusterOptions.takeoverGrace) } catch { throw Self.unreachable(error) }
        switch asked {
        case .noSuchJob: throw RequestProblem(status: 404, message: "no job \(id)")
        case .ended: return try await clusterStatus(id, store)
        case .settled:
            log.info("job \(id): stopped (asked) with no instance running it\(store.webhooks ? "; its job.finished is queued" : "")")
            return try await clusterStatus(id, store)
        case .owner(let owner):
            log.info("job \(id): stop passed to its owner \(owner)")
            // Its files take a few seconds to finish; past a minute, the state so far.
            let deadline = ContinuousClock.now + .seconds(60)
            while ContinuousClock.now < deadline {
                if let row = try? await store.row(id), row.outcome != nil { break }
                try? await Task.sleep(for: .milliseconds(100))
            }
            return try await clusterStatus(id, store)
        }
    }

    /// Pause or resume of a job not running here: its owner is told (NOTIFY) and the answer is
    /// its state once the owner published the change (at most 5 s).
    func clusterSetPaused(_ id: String, _ paused: Bool, _ store: ClusterStore) async throws(RequestProblem) -> JobStatus {
        let row: ClusterStore.Row?
        do { row = try await store.row(id) } catch { throw Self.unreachable(error) }
        guard let row else { throw RequestProblem(status: 404, message: "no job \(id)") }
        guard !row.state.isEnded else { throw RequestProblem(status: 409, message: "job \(id) has ended: it cannot be \(paused ? "paused" : "resumed")") }
        guard row.state.isHeld, !row.orphaned else {
            throw RequestProblem(status: 503, message: "job \(id) has no running owner right now (being taken over): ask again in a few seconds")
        }
        do { try await store.notify((paused ? "pause " : "resume ") + id) } catch { throw Self.unreachable(error) }
        let deadline = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < deadline {
            if let status = try? await store.row(id)?.status, status.paused == paused { break }
            try? await Task.sleep(for: .milliseconds(100))
        }
        return try await clusterStatus(id, store)
    }

    /// A job of this instance's memory while the database cannot be read. One it stopped
    /// writing (fenced: its lease or session lost) may be running on another instance: its end
    /// here is no outcome, so it shows as being taken over, never `done` (issue 44).
    static func shownUnreachable(_ job: Job, fenced: Bool, instance: String) -> JobStatus {
        var status = JobStatus(job)
        status.owner = instance
        if fenced {
            status.state = Job.State.reconnecting.rawValue
            status.ended = nil
        }
        return status
    }

    /// A row as the API shows it: the owner's last published status, the outcome over it.
    private func shown(_ row: ClusterStore.Row, _ store: ClusterStore) -> JobStatus {
        var status: JobStatus
        if let job = jobs[row.id], row.owner == store.instance, !fenced.contains(row.id) {
            status = JobStatus(job)
        } else if var published = row.status {
            if row.state == .queued { published.state = Job.State.starting.rawValue }
            // Published by an earlier run: its new owner has claimed it and not yet said it runs
            // (a client told `running` here would hand its keys to a job not started yet).
            if row.state == .running || row.state == .paused, published.resumes < row.resumes { published.state = Job.State.starting.rawValue }
            // Its owner is gone; another instance takes it within a claim tick.
            if row.orphaned { published.state = Job.State.reconnecting.rawValue }
            status = published
        } else {
            status = JobStatus(Job(id: row.id, spec: row.spec, created: row.created, resumes: row.resumes, live: LiveStatus(), sent: nil))
        }
        if let outcome = row.outcome {
            status.state = outcome.state.rawValue
            status.ended = outcome.ended
            if let error = outcome.error { status.lastError = JobStatus.withoutConnectReason(error) }
        }
        status.resumes = row.resumes
        status.owner = row.owner
        return status
    }

    /// The state of a job of this instance, written for the others.
    func clusterPersist(_ job: Job, _ store: ClusterStore) {
        guard !fenced.contains(job.id) else { return }
        let status = JobStatus(job)
        if let outcome = job.outcome {
            fence.forget(job.id)
            jobSessions[job.id] = nil
            // Retried: a job whose end is not written would be taken up again once its lease ran out.
            let publishing = config.publishing
            Task { [log] in
                // The job's events told before its end go before the end's own (job.failed).
                await publishing?.webhooksWritten()
                for attempt in 1...300 {
                    do {
                        let decided = try await store.end(job.id, outcome, status: status, retry: attempt > 1)
                        if case .refused(let why) = decided { log.warning("job \(job.id): its end is not written here: \(why)") }
                        return
                    } catch {
                        if attempt == 1 { log.error("cluster: cannot write the end of job \(job.id) (\(error)); trying again every second") }
                    }
                    try? await Task.sleep(for: .seconds(1))
                }
            }
        } else {
            Task { try? await store.publish(status) }
        }
    }
}

extension JobManager {
    /// `POST /v1/recordings/{id}/uploads/abandon` with `{"instance", "reason"}`: an owner's
    /// folders given up, its disk gone for good (ClusterStore+Abandon); the recording's merged
    /// manifest and `job.finished` go out at once, naming them. Answers the recording.
    func abandonUploads(_ id: String, _ body: Data) async throws(RequestProblem) -> JobStatus {
        try await store.abandonUploads(id, body: body, in: self)
    }

    func clusterAbandon(_ id: String, _ body: Data, _ cluster: ClusterStore) async throws(RequestProblem) -> JobStatus {
        guard let publishing = config.publishing, publishing.location != nil else {
            throw RequestProblem(status: 409, message: "no recording waits for an owner's folder without --database and --storage")
        }
        let (owner, reason) = try Self.abandonRequest(body)
        let result: ClusterStore.Abandoned
        do { result = try await cluster.abandon(job: id, owner: owner, reason: reason, grace: clusterOptions.takeoverGrace) } catch { throw Self.unreachable(error) }
        switch result {
        case .notFound: throw RequestProblem(status: 404, message: "no job \(id)")
        case .refused(let why): throw RequestProblem(status: 409, message: "job \(id): \(why)")
        case .done(let folders, let files):
            log.warning("job \(id): \(folders) unqueued folder(s) and \(files) pending file(s) of \(owner) abandoned: \(reason)")
            await publishing.advanceNow(id)
        }
        return try await clusterStatus(id, cluster)
    }

    private static func abandonRequest(_ body: Data) throws(RequestProblem) -> (owner: String, reason: String) {
        guard let object = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] else {
            throw .field("body", "must be a JSON object: {\"instance\": …, \"reason\": …}")
        }
        if let unknown = object.keys.filter({ !["instance", "reason"].contains($0) }).sorted().first {
            throw .field(unknown, "unknown field; an abandon takes instance, reason")
        }
        guard let owner = object["instance"] as? String, !owner.isEmpty, owner.utf8.count <= 200 else {
            throw .field("instance", "must name the owner whose folder is given up, as uploads.waitingFor does")
        }
        guard let reason = object["reason"] as? String, !reason.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, reason.utf8.count <= 500 else {
            throw .field("reason", "must say why, in at most 500 bytes: the merged manifest and job.finished keep it")
        }
        return (owner, reason)
    }
}
