import Foundation
import PostgresNIO
import Webhooks

/// The webhook outbox with `--database`: every instance queues its events as tasks of kind
/// `webhook` (ClusterStore+Tasks), where possible in the transaction of the change that causes
/// them, and any live instance delivers them (`TaskWorker`). An event is queued once per id
/// (the task's key); a job's events are ordered tasks, each delivered only once the one before
/// it was delivered (or given up after its day of tries). At least once: an instance that dies
/// between its POST and writing it down leaves the event to be sent again.
extension ClusterStore {
    /// Queues `event` (of `job`, nil for none) in `connection`'s transaction, after every event
    /// of the job queued before. Nothing for an id already queued, whatever its body (answers
    /// false), nor without `--webhook-url`.
    @discardableResult
    func enqueue(_ event: WebhookEvent, job: String?, _ connection: PostgresConnection) async throws -> Bool {
        guard webhooks else { return false }
        return try await enqueue(NewTask(webhook: event, job: job), connection)
    }

    /// `enqueue` in a transaction of its own (an event no state change of the database causes).
    @discardableResult
    func enqueue(_ event: WebhookEvent, job: String?) async throws -> Bool {
        try await client.withTransaction(logger: log) { try await enqueue(event, job: job, $0) }
    }
}

extension NewTask {
    /// An event as a task: its id the key, its type an argument, its body kept byte for byte
    /// (every try signs and sends these bytes); a job's events in order.
    init(webhook event: WebhookEvent, job: String?) {
        self.init(kind: .webhook, key: event.id, job: job, ordered: job != nil, args: ["type": event.type],
                  payload: String(decoding: event.body, as: UTF8.self))
    }
}
