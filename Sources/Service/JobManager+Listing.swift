import Foundation
import Logging

/// Listing and forgetting jobs.
extension JobManager {
    func list() -> [JobStatus] { order.compactMap { jobs[$0] }.map(JobStatus.init) }

    /// Jobs of `kind`, oldest first: at most `limit` after the job `after`, and the id to pass as
    /// `after` for the next page (nil: this was the last).
    func page(_ kind: JobSpec.Kind, limit: Int, after: String?) async throws(RequestProblem) -> (jobs: [JobStatus], next: String?) {
        try await store.page(kind, limit: limit, after: after, in: self)
    }

    /// Forgets finished jobs that ended more than `keepFinished` ago: their records, in memory and
    /// in the store. Their recordings stay where they are.
    func pruneFinished() async {
        let cutoff = Date().addingTimeInterval(-config.keepFinished)
        let old = jobs.values.filter { ($0.outcome?.ended).map { $0 < cutoff } ?? false }.map(\.id)
        await store.prune(before: cutoff, here: old)
        guard !old.isEmpty else { return }
        for id in old { jobs[id] = nil }
        let gone = Set(old)
        config.publishing?.forget(old)
        order.removeAll { gone.contains($0) }
        log.info("forgot \(old.count) job(s) finished more than \(Int(config.keepFinished)) s ago (--keep-finished)")
    }
}
