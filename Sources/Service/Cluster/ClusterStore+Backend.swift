import Bot
import Foundation
import FrameCrypto
import Logging
import Webhooks

/// `--database`: the cluster's side of `JobStoreBackend`. Any instance answers for any job from
/// the database, the owner for its own from memory; a new job waits in `queued` for whichever
/// instance has room (JobManager+ClusterAPI, JobManager+Cluster).
extension ClusterStore: JobStoreBackend {
    var owner: String? { instance }

    /// This store as the service `config` uses it: webhooks queued in the database when
    /// `--webhook-url` is given, uploads kept in it.
    func serving(_ config: ServeConfiguration) -> ClusterStore {
        var store = self
        store.webhooks = config.publishing?.webhooks != nil
        if let schedule = config.publishing?.webhooks?.schedule { store.taskPolicy.schedule = schedule }
        config.publishing?.use(store)
        return store
    }

    func start(in manager: isolated JobManager) async -> Task<Void, Never>? {
        Task { await manager.runCluster(self) }
    }

    func shutdown(stopped: [String], in manager: isolated JobManager) async {
        // Free for the other instances at once rather than when their leases run out.
        do { try await release(stopped) } catch {
            log.warning("cluster: cannot release \(stopped.count) job(s); others take them when their leases end: \(error)")
        }
    }

    /// Any instance with room takes it: `insert` counts every instance's `--max-jobs`.
    func checkRoom(in manager: isolated JobManager) throws(RequestProblem) {}

    func held(in manager: isolated JobManager) async throws(RequestProblem) -> [HeldPaths] {
        try await manager.clusterHeld(self)
    }

    func admit(_ new: Admission, in manager: isolated JobManager) async throws(RequestProblem) -> JobStatus {
        // Stored relative to the roots: the instance that takes it resolves them below its own.
        try await manager.enqueue(id: new.id, spec: new.paths.rootRelativeSpec(new.spec), self)
    }

    func status(of id: String, in manager: isolated JobManager) async throws(RequestProblem) -> JobStatus {
        try await manager.clusterStatus(id, self)
    }

    /// Nothing: the owner's end is what counts, written when its files are finished (a stop
    /// through another instance is `askStop`, `stopElsewhere`).
    func stopping(_ job: Job, in manager: isolated JobManager) {}

    func stopElsewhere(_ id: String, in manager: isolated JobManager) async throws(RequestProblem) -> JobStatus {
        try await manager.clusterStop(id, self)
    }

    /// Answered once in the database, where a next owner reads it.
    func pauseKept(_ job: Job, _ paused: Bool, in manager: isolated JobManager) async throws(RequestProblem) {
        do {
            try await publish(JobStatus(job))
            try await setPaused(job.id, paused)
        } catch { throw JobManager.unreachable(error) }
    }

    func setPausedElsewhere(_ id: String, _ paused: Bool, in manager: isolated JobManager) async throws(RequestProblem) -> JobStatus {
        try await manager.clusterSetPaused(id, paused, self)
    }

    func refuseKeys(_ id: String, kind: JobSpec.Kind, in manager: isolated JobManager) async -> RequestProblem {
        let row: Row?
        do { row = try await self.row(id) } catch { return JobManager.unreachable(error) }
        guard let row, row.spec.kind == kind else { return RequestProblem(status: 404, message: "no \(kind.rawValue) \(id)") }
        guard row.outcome == nil else { return JobManager.ended(id) }
        guard row.spec.frameFormat.namesItsKey else { return JobManager.notIndexed(id, row.spec) }
        if let owner = row.owner, owner != instance, !row.orphaned {
            return RequestProblem(status: 409, message: "job \(id) runs on instance \(owner), not this one (\(instance)): POST its keys to \(owner); keys are held only by the instance running the job and are never passed on")
        }
        return RequestProblem(status: 409, message: "job \(id) is not running on any instance right now (being taken up): hand its keys to its next owner (GET shows owner) once it runs")
    }

    func abandonUploads(_ id: String, body: Data, in manager: isolated JobManager) async throws(RequestProblem) -> JobStatus {
        try await manager.clusterAbandon(id, body, self)
    }

    func persist(_ job: Job, in manager: isolated JobManager) {
        manager.clusterPersist(job, self)
    }

    func page(_ kind: JobSpec.Kind, limit: Int, after: String?, in manager: isolated JobManager) async throws(RequestProblem) -> (jobs: [JobStatus], next: String?) {
        try await manager.clusterPage(kind, limit: limit, after: after, self)
    }

    /// In the database; the ones the manager forgets from memory were read from it.
    func prune(before cutoff: Date, here: [String]) async {
        try? await prune(before: cutoff)
    }
}
