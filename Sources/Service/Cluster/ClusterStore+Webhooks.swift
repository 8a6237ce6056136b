import Foundation
import PostgresNIO
import Webhooks

/// The webhook outbox with `--database` (step 9, `webhook_events`): every instance queues its
/// events in the table, where possible in the transaction of the change that causes them, and
/// any live instance delivers them (`ClusterWebhookDelivery`). An event is queued once per id;
/// a job's events are delivered in the order they were queued, each only once the one before
/// it was delivered (or given up after its day of tries). At least once: an instance that dies
/// between its POST and writing it down leaves the event to be sent again.
extension ClusterStore {
    /// An event claimed for one try.
    struct OutboxEvent: Sendable, Equatable {
        var row: Int64
        var id: String
        var job: String?
        var seq: Int
        var type: String
        var body: [UInt8]
        var attempts: Int
    }

    /// Queues `event` (of `job`, nil for none) in `connection`'s transaction, after every event
    /// of the job queued before: its `seq` is taken under a per-job advisory lock held to the
    /// transaction's end, so a job's events commit in their order. Nothing for an id already
    /// queued, whatever its body (answers false), nor without `--webhook-url`.
    @discardableResult
    func enqueue(_ event: WebhookEvent, job: String?, _ connection: PostgresConnection) async throws -> Bool {
        guard webhooks else { return false }
        if let job { try await connection.query("SELECT pg_advisory_xact_lock(727276, hashtext(\(job)))", logger: log) }
        let body = String(decoding: event.body, as: UTF8.self)
        let rows = try await connection.query("""
            INSERT INTO webhook_events (event_id, job_id, seq, type, body, queued_by)
            SELECT \(event.id), \(job), coalesce(max(seq), 0) + 1, \(event.type), \(body)::json, \(instance)
            FROM webhook_events WHERE job_id = \(job)
            ON CONFLICT (event_id) DO NOTHING RETURNING seq
            """, logger: log).collect()
        return !rows.isEmpty
    }

    /// `enqueue` in a transaction of its own (an event no state change of the database causes).
    @discardableResult
    func enqueue(_ event: WebhookEvent, job: String?) async throws -> Bool {
        try await client.withTransaction(logger: log) { try await enqueue(event, job: job, $0) }
    }

    /// Up to `limit` events due now, each the first of its job not yet delivered, claimed by
    /// this instance for `hold` (`FOR UPDATE SKIP LOCKED`: two instances never claim one). An
    /// event claimed by another whose claim ran out, or whose database session is gone, is
    /// claimed again.
    func claimWebhooks(session: Int64?, limit: Int, hold: Duration) async throws -> [OutboxEvent] {
        try await client.withTransaction(logger: log) { connection -> [OutboxEvent] in
            let due = try await connection.query("""
                SELECT e.id FROM webhook_events e
                WHERE e.delivered IS NULL AND e.gave_up IS NULL AND e.next_attempt <= now()
                    AND (e.claim_until IS NULL OR e.claim_until < now()
                         OR e.claimed_session IN (SELECT key FROM instance_sessions WHERE gone_since IS NOT NULL))
                    AND NOT EXISTS (SELECT 1 FROM webhook_events p WHERE p.job_id = e.job_id AND p.seq < e.seq
                                    AND p.delivered IS NULL AND p.gave_up IS NULL)
                ORDER BY e.id LIMIT \(limit) FOR UPDATE OF e SKIP LOCKED
                """, logger: log).collect().map { try $0.decode(Int64.self) }
            guard !due.isEmpty else { return [] }
            let rows = try await connection.query("""
                UPDATE webhook_events SET claimed_by = \(instance), claimed_session = \(session),
                    claim_until = now() + make_interval(secs => \(Self.seconds(hold)))
                WHERE id = ANY(\(due)) RETURNING id, event_id, job_id, seq, type, body::text, attempts
                """, logger: log)
            var out: [OutboxEvent] = []
            for try await (row, id, job, seq, type, body, attempts) in rows.decode((Int64, String, String?, Int, String, String, Int).self) {
                out.append(OutboxEvent(row: row, id: id, job: job, seq: seq, type: type, body: Array(body.utf8), attempts: attempts))
            }
            return out.sorted { $0.row < $1.row }
        }
    }

    /// The receiver took it: the job's next event may go.
    func delivered(_ event: OutboxEvent) async throws {
        try await client.query("""
            UPDATE webhook_events SET delivered = now(), attempts = attempts + 1, last_error = NULL,
                claimed_by = NULL, claimed_session = NULL, claim_until = NULL WHERE id = \(event.row) AND delivered IS NULL
            """, logger: log)
    }

    /// A try failed: tried again after `retryIn`, or given up once `giveUpAfter` has passed since
    /// it was queued (answers true then; the job's next event may go).
    func failed(_ event: OutboxEvent, why: String, retryIn: Duration, giveUpAfter: Duration?) async throws -> Bool {
        let limit = giveUpAfter.map(Self.seconds)
        let rows = try await client.query("""
            UPDATE webhook_events SET attempts = attempts + 1, last_error = \(why), claimed_by = NULL, claimed_session = NULL, claim_until = NULL,
                next_attempt = now() + make_interval(secs => \(Self.seconds(retryIn))),
                gave_up = CASE WHEN \(limit)::double precision IS NOT NULL AND created <= now() - make_interval(secs => \(limit)) THEN now() END
            WHERE id = \(event.row) AND delivered IS NULL RETURNING gave_up IS NOT NULL
            """, logger: log).collect()
        return try rows.first?.decode(Bool.self) ?? false
    }

    /// A try cut short by this instance's shutdown: free for the others at once, not counted.
    func unclaim(_ event: OutboxEvent) async throws {
        try await client.query("""
            UPDATE webhook_events SET claimed_by = NULL, claimed_session = NULL, claim_until = NULL WHERE id = \(event.row) AND claimed_by = \(instance)
            """, logger: log)
    }

    /// Events not yet delivered nor given up.
    func webhookDepth() async throws -> Int {
        try await client.query("SELECT count(*) FROM webhook_events WHERE delivered IS NULL AND gave_up IS NULL", logger: log)
            .collect().first?.decode(Int.self) ?? 0
    }

    /// Delivered or given-up events are kept a day (their ids still refuse a repeat), then deleted.
    func pruneWebhooks() async throws {
        try await client.query("DELETE FROM webhook_events WHERE coalesce(delivered, gave_up) < now() - interval '1 day'", logger: log)
    }
}
