import Foundation
import Logging
import ObjectStore
import Spool
import Webhooks

/// Webhooks with `--database`: tasks of the cluster's queue (ClusterStore+Webhooks) instead of
/// the state folder's, delivered by any live instance (TaskWorker). Events a database
/// transaction causes are queued in it (a job's end, a stop, an upload failure, the uploads
/// finished); the others (started, paused, failed over, reconnecting, a recording's end without
/// storage) are told on the job manager's actor, which cannot wait for the database: they are
/// queued in the state folder's task queue (synced), which the worker empties into the
/// database's in their order at the start of each round (`TaskWorker.inbox`), and a job's end
/// waits for them (`webhooksWritten`), so its events keep their order.
extension JobPublishing {
    /// Returns once every event queued here before the call is in the database, or after `limit`.
    func webhooksWritten(within limit: Duration = .seconds(10)) async {
        guard clusterStore != nil else { return }
        let deadline = ContinuousClock.now + limit
        let queued = tasks.names
        while !queued.isEmpty, ContinuousClock.now < deadline, !tasks.names.isDisjoint(with: queued) {
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    /// `upload.failed` of a file's `attempts`-th failed try: on the first and every tenth after,
    /// so that a store down for hours does not flood the receiver. Its id names the file and
    /// the try: queued once whoever reports it.
    static func uploadFailedEvent(job: String?, file: String, key: String, _ why: String, attempts: Int) -> WebhookEvent? {
        guard attempts > 0, (attempts - 1) % 10 == 0 else { return nil }
        let event = UploadFailedEvent(job: job, file: file, key: key, attempts: attempts, reason: why)
        return try? WebhookEvent(.uploadFailed, data: event, id: "upload-\(LocalTaskQueue.fileID(key: key)).failed.\(attempts - 1)")
    }

    /// The events of an older version's outbox directory (`webhooks/`), queued as tasks (not
    /// ordered: their jobs are not known) and removed from it.
    static func adoptOutbox(_ directory: URL, into tasks: LocalTaskQueue, logger: Logger) {
        guard FileManager.default.fileExists(atPath: directory.path), let outbox = try? Spool<WebhookEvent>(directory: directory, what: "the webhook outbox") else { return }
        let (events, _) = outbox.load()
        for (id, event) in events {
            do {
                try tasks.enqueue(NewTask(webhook: event, job: nil), now: event.created)
                try outbox.remove(id)
            } catch {
                logger.error("webhook \(id) of the outbox directory cannot be queued as a task (\(error)); it stays in \(directory.path)")
            }
        }
        if !events.isEmpty { logger.info("\(events.count) webhook(s) of the outbox directory queued as tasks") }
    }
}
