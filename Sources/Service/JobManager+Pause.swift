import Foundation
import Logging

extension JobManager {
    /// Pauses or resumes a running job and answers with its state; a job that ended is a 409.
    func setPaused(_ id: String, _ paused: Bool) async throws(RequestProblem) -> JobStatus {
        if let cluster { return try await clusterSetPaused(id, paused, cluster) }
        guard let job = jobs[id] else { throw RequestProblem(status: 404, message: "no job \(id)") }
        guard job.isActive, !job.stopRequested else {
            throw RequestProblem(status: 409, message: "job \(id) has ended: it cannot be \(paused ? "paused" : "resumed")")
        }
        guard let pause = job.pause else {
            throw RequestProblem(status: 409, message: "job \(id) cannot be paused: a bridge into another room has no pause (DELETE ends it)")
        }
        if pause.set(paused: paused) {
            log.info("job \(id) \(paused ? "paused" : "resumed") (asked)")
            persist(job)
            config.publishing?.paused(job: id, kind: job.spec.kind.rawValue, room: job.spec.room, paused: paused, pause: pause.all.count)
            // Answered once on disk: a crash right after must not undo what was answered.
            await store?.flush()
        }
        return JobStatus(job)
    }
}
