import Foundation
import Logging

extension JobManager {
    /// Pauses or resumes a running job and answers with its state; a job that ended is a 409.
    func setPaused(_ id: String, _ paused: Bool) async throws(RequestProblem) -> JobStatus {
        try await store.setPaused(id, paused, in: self)
    }

    /// A pause or resume applied to a job running here (`pause.set` changed it): said, kept,
    /// told; the store then makes it durable before the answer.
    func pauseApplied(_ job: Job, _ paused: Bool, _ pause: JobPause) {
        log.info("job \(job.id) \(paused ? "paused" : "resumed") (asked)")
        persist(job)
        config.publishing?.paused(job: job.id, kind: job.spec.kind.rawValue, room: job.spec.room, paused: paused, pause: pause.all.count)
    }
}
