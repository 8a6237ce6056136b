import Foundation
import Logging

/// Stop, pause and resume: one path alone and in a cluster. A job running here is changed here,
/// as the lifecycle decides for its owner, and its store keeps the change; any other is the
/// store's to pass on (to its owner) or to settle.
extension JobManager {
    /// A job this instance runs and may still write (not fenced); nil: another's, or ended.
    func runningHere(_ id: String) -> Job? {
        guard let job = jobs[id], job.isActive, !fenced.contains(id) else { return nil }
        return job
    }

    /// Stops a job and answers with its final state (also for a job that had ended).
    func stop(_ id: String) async throws(RequestProblem) -> JobStatus {
        guard let job = runningHere(id) else { return try await store.stopElsewhere(id, in: self) }
        log.info("stopping job \(id) (asked)")
        store.stopping(job, in: self)
        await job.stop()
        return try await store.status(of: id, in: self)
    }

    /// Pauses or resumes a running job and answers with its state; a job that ended is a 409.
    func setPaused(_ id: String, _ paused: Bool) async throws(RequestProblem) -> JobStatus {
        guard let job = runningHere(id) else { return try await store.setPausedElsewhere(id, paused, in: self) }
        let decision = job.decided(paused ? .pause : .resume)
        // Stopping: its files are being finished.
        if case .refused = decision { throw Self.cannotPause(id, paused) }
        guard let pause = job.pause else {
            throw RequestProblem(status: 409, message: "job \(id) cannot be paused (DELETE ends it)")
        }
        if case .apply = decision, pause.set(paused: paused) {
            log.info("job \(id) \(paused ? "paused" : "resumed") (asked)")
            persist(job)
            config.publishing?.paused(job: id, kind: job.spec.kind.rawValue, room: job.spec.room, paused: paused, pause: pause.all.count)
            try await store.pauseKept(job, paused, in: self)
        }
        return JobStatus(job)
    }

    /// The 409 of a pause or resume the lifecycle refused: ended, or stopping (its end is near).
    static func cannotPause(_ id: String, _ paused: Bool) -> RequestProblem {
        RequestProblem(status: 409, message: "job \(id) has ended: it cannot be \(paused ? "paused" : "resumed")")
    }
}
