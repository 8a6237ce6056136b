import Foundation

/// Told of every change of a job's state on the instance that runs it: created or taken up
/// (also after a failover: `resumes` > 0, `owners` in the database), and ended (its files and
/// manifest finished, listed in `status.files`). The seam for uploads and webhooks. Called on
/// the job manager's actor: queue the work and return.
public protocol JobEvents: Sendable {
    func jobChanged(_ status: JobStatus, ended: Bool)
}
