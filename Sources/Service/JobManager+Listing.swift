import Foundation
import Logging

/// Listing and forgetting jobs.
extension JobManager {
    func list() -> [JobStatus] { order.compactMap { jobs[$0] }.map(JobStatus.init) }

    /// Jobs of `kind`, oldest first: at most `limit` after the job `after`, and the id to pass as
    /// `after` for the next page (nil: this was the last).
    func page(_ kind: JobSpec.Kind, limit: Int, after: String?) async throws(RequestProblem) -> (jobs: [JobStatus], next: String?) {
        if let cluster { return try await clusterPage(kind, limit: limit, after: after, cluster) }
        let ofKind = order.compactMap { jobs[$0] }.filter { $0.spec.kind == kind }
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

    /// Forgets finished jobs that ended more than `keepFinished` ago: their records, in memory and
    /// in the state folder. Their recordings stay where they are.
    func pruneFinished() async {
        let cutoff = Date().addingTimeInterval(-config.keepFinished)
        if let cluster { try? await cluster.prune(before: cutoff) }
        let old = jobs.values.filter { ($0.outcome?.ended).map { $0 < cutoff } ?? false }.map(\.id)
        guard !old.isEmpty else { return }
        for id in old {
            jobs[id] = nil
            store?.remove(id)
        }
        let gone = Set(old)
        config.publishing?.forget(old)
        order.removeAll { gone.contains($0) }
        log.info("forgot \(old.count) job(s) finished more than \(Int(config.keepFinished)) s ago (--keep-finished)")
    }
}
