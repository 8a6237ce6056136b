import Foundation
import Logging
import ObjectStore
import Spool
import Webhooks

/// Webhooks with `--database`: into the cluster's table (ClusterStore+Webhooks) instead of this
/// instance's outbox directory, delivered by any live instance (tasks of kind `webhook`, TaskWorker). Events
/// a database transaction causes are queued in it (a job's end, a stop, an upload failure, the
/// uploads finished); the others (started, paused, failed over, reconnecting, a recording's end
/// without storage) are told on the job manager's actor, which cannot wait for the database:
/// they are written in the order they were told by one loop here, and a job's end waits for
/// them (`webhooksWritten`), so its events keep their order.
extension JobPublishing {
    /// An event of `job` for the table, written by `forwardWebhooks` in this order.
    func forward(_ event: WebhookEvent, job: String) {
        forwarding.update { $0.append((job, event)) }
    }

    /// Writes forwarded events, oldest first, each until the database takes it; at a shutdown
    /// what is left is tried once more.
    func forwardWebhooks(_ store: ClusterStore) async {
        var failing = false
        while true {
            let cancelled = Task.isCancelled
            while let next = forwarding.value.first {
                let (job, event) = next
                do {
                    try await store.enqueue(event, job: job)
                    forwarding.update { _ = $0.removeFirst() }
                    failing = false
                } catch {
                    if !failing { logger.error("webhook \(event.type) of job \(job) cannot be queued in the database (\(error)); trying again every second") }
                    failing = true
                    break
                }
            }
            if cancelled {
                let left = forwarding.value.count
                if left > 0 { logger.error("\(left) webhook(s) not queued in the database at shutdown: lost") }
                return
            }
            try? await Task.sleep(for: failing ? .seconds(1) : .milliseconds(50))
        }
    }

    /// Returns once every event forwarded before the call is in the table, or after `limit`.
    func webhooksWritten(within limit: Duration = .seconds(10)) async {
        let deadline = ContinuousClock.now + limit
        let ids = Set(forwarding.value.map(\.event.id))
        while !ids.isEmpty, ContinuousClock.now < deadline, forwarding.value.contains(where: { ids.contains($0.event.id) }) {
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    /// `upload.failed` of a file's `attempts`-th failed try: on the first and every tenth after,
    /// so that a store down for hours does not flood the receiver. Its id names the file and
    /// the try: queued once whoever reports it.
    static func uploadFailedEvent(_ entry: UploadEntry, _ why: String, attempts: Int) -> WebhookEvent? {
        guard attempts > 0, (attempts - 1) % 10 == 0 else { return nil }
        let event = UploadFailedEvent(job: entry.context["job"], file: entry.file, key: entry.key, attempts: attempts, reason: why)
        return try? WebhookEvent(.uploadFailed, data: event, id: "upload-\(UploadQueue.id(key: entry.key)).failed.\(attempts - 1)")
    }

    /// The events of an older version's outbox directory (`webhooks/`), queued as tasks (not
    /// ordered: their jobs are not known) and removed from it.
    static func adoptOutbox(_ directory: URL, into tasks: LocalTaskQueue, logger: Logger) {
        guard FileManager.default.fileExists(atPath: directory.path), let outbox = try? Spool<WebhookEvent>(directory: directory, what: "the webhook outbox") else { return }
        let (events, _) = outbox.load()
        for (id, event) in events {
            do {
                try tasks.enqueue(ClusterStore.task(event, job: nil), now: event.created)
                try outbox.remove(id)
            } catch {
                logger.error("webhook \(id) of the outbox directory cannot be queued as a task (\(error)); it stays in \(directory.path)")
            }
        }
        if !events.isEmpty { logger.info("\(events.count) webhook(s) of the outbox directory queued as tasks") }
    }

    /// What this instance queued alone, before `--database`: into the cluster's queue (each
    /// removed here once the database took it; what it did not take waits for the next start).
    func moveLocalTasks(to store: ClusterStore) async {
        let moved = await tasks.moveAll { task in try await store.enqueue(task) }
        if moved.moved > 0 { logger.info("\(moved.moved) task(s) queued before --database moved to the database") }
        if moved.left > 0 { logger.error("\(moved.left) task(s) queued before --database cannot be moved to the database; tried again at the next start") }
    }
}
