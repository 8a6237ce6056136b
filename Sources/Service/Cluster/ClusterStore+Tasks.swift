import Foundation
import PostgresNIO
import Spool

/// The cluster's task queue (`tasks`, migration step 10; docs/cluster.md): queued in the
/// transaction of the change that causes a task, claimed by any live instance (`FOR UPDATE
/// SKIP LOCKED`, never one pinned to another), each try's outcome and each rescue decided by
/// `TaskPolicy` on the database's clock and written as one statement guarded by the state it
/// starts from (`running`, and still this instance's claim).
extension ClusterStore: TaskQueue {
    typealias Tasks = TaskPolicy<DatabaseInstant>

    /// Queues `task` in `connection`'s transaction; false: one of its kind and key is queued
    /// already (whatever its arguments). An ordered task's `seq` is taken under a per-job
    /// advisory lock held to the transaction's end, so a job's tasks commit in their order.
    @discardableResult
    func enqueue(_ task: NewTask, _ connection: PostgresConnection) async throws -> Bool {
        if task.ordered, let job = task.job { try await connection.query("SELECT pg_advisory_xact_lock(727276, hashtext(\(job)))", logger: log) }
        let args = String(decoding: try Self.encoder.encode(task.args), as: UTF8.self)
        let rows = try await connection.query("""
            INSERT INTO tasks (kind, key, job_id, seq, pinned_to, args, payload, queued_by)
            SELECT \(task.kind.rawValue), \(task.key), \(task.job), CASE WHEN \(task.ordered) THEN coalesce(max(seq), 0) + 1 END,
                \(task.pinnedTo), \(args)::jsonb, \(task.payload), \(instance)
            FROM tasks WHERE kind = \(task.kind.rawValue) AND job_id = \(task.job)
            ON CONFLICT (kind, key) DO NOTHING RETURNING id
            """, logger: log).collect()
        return !rows.isEmpty
    }

    /// `enqueue` in a transaction of its own (a task no change of the database causes).
    @discardableResult
    func enqueue(_ task: NewTask) async throws -> Bool {
        try await client.withTransaction(logger: log) { try await enqueue(task, $0) }
    }

    /// A task moved from this instance's state folder: a file to upload is on this instance's disk.
    func add(_ task: NewTask) async throws -> Bool {
        var task = task
        if task.kind == .upload, task.payload == nil, task.pinnedTo == nil { task.pinnedTo = instance }
        return try await enqueue(task)
    }

    /// Another instance's additions are not heard of: the worker looks again after `limit`.
    func nap(upTo limit: Duration) async { try? await Task.sleep(for: limit) }

    func claim(_ kinds: [TaskKind], session: Int64?, limit: Int) async throws -> [QueuedTask] {
        let rows = try await client.query("""
            WITH due AS (
                SELECT t.id FROM tasks t
                WHERE t.state = 'available' AND t.run_at <= now() AND t.kind = ANY(\(kinds.map(\.rawValue)))
                    AND (t.pinned_to IS NULL OR t.pinned_to = \(instance))
                    AND (t.seq IS NULL OR NOT EXISTS (SELECT 1 FROM tasks p WHERE p.kind = t.kind AND p.job_id = t.job_id AND p.seq < t.seq
                                                      AND p.state IN ('available', 'running')))
                ORDER BY t.id LIMIT \(limit) FOR UPDATE OF t SKIP LOCKED)
            UPDATE tasks t SET state = 'running', claimed_by = \(instance), claimed_session = \(session),
                claim_until = now() + make_interval(secs => CASE WHEN t.kind = 'upload' THEN \(Self.seconds(taskPolicy.hold(.upload)))
                                                              ELSE \(Self.seconds(taskPolicy.hold)) END)
            FROM due WHERE t.id = due.id
            RETURNING \(unescaped: Self.taskColumns)
            """, logger: log).collect()
        return try rows.map { try Self.task($0) }.sorted { $0.id < $1.id }
    }

    func finish(_ task: QueuedTask, _ outcome: RetryOutcome, cancelled: Bool) async throws -> TaskDecision? {
        if outcome == .done {
            // Whoever holds it now: the receiver took it (a rescued task sent twice is at least once).
            let rows = try await client.query("""
                UPDATE tasks SET state = 'completed', finished = now(), attempts = attempts + 1, last_error = NULL,
                    claimed_by = NULL, claimed_session = NULL, claim_until = NULL
                WHERE id = \(task.id) AND state IN ('available', 'running') RETURNING id
                """, logger: log).collect()
            return rows.isEmpty ? nil : .complete
        }
        let jitter = Double.random(in: 0.75...1)
        return try await client.withTransaction(logger: log) { connection -> TaskDecision? in
            let rows = try await connection.query("""
                SELECT \(unescaped: Self.claimedColumns) FROM tasks t LEFT JOIN instance_sessions s ON s.key = t.claimed_session
                WHERE t.id = \(task.id) AND t.state = 'running' AND t.claimed_by = \(instance) FOR UPDATE OF t
                """, logger: log).collect()
            guard let row = rows.first else { return nil }
            let (claimed, now) = try Self.claimed(row, from: 0)
            let decision = taskPolicy.afterTry(outcome, of: claimed, cancelled: cancelled, at: now, jitter: jitter)
            try await write(decision, to: task.id, claimer: instance, connection)
            return TaskDecision(decision)
        }
    }

    /// The scan is narrowed to the rows the policy could free (no healthy claim is locked);
    /// the policy decides each.
    func rescue() async throws -> [(task: QueuedTask, decision: TaskDecision)] {
        try await client.withTransaction(logger: log) { connection in
            let rows = try await connection.query("""
                SELECT \(unescaped: Self.taskColumns), t.claimed_by, \(unescaped: Self.claimedColumns)
                FROM tasks t LEFT JOIN instance_sessions s ON s.key = t.claimed_session
                WHERE t.state = 'running' AND t.kind = ANY(\(TaskKind.allCases.map(\.rawValue)))
                    AND (t.claim_until < now() OR s.gone_since IS NOT NULL)
                ORDER BY t.id FOR UPDATE OF t SKIP LOCKED
                """, logger: log).collect()
            var out: [(task: QueuedTask, decision: TaskDecision)] = []
            for row in rows {
                let task = try Self.task(row)
                let claimer = try row.makeRandomAccess()[8].decode(String.self)
                let (claimed, now) = try Self.claimed(row, from: 9)
                let decision = taskPolicy.rescue(claimed, at: now)
                guard decision != .keep else { continue }
                try await write(decision, to: task.id, claimer: claimer, connection)
                out.append((task, TaskDecision(decision)))
            }
            return out
        }
    }

    func depth(_ kind: TaskKind) async throws -> Int {
        try await client.query("SELECT count(*) FROM tasks WHERE kind = \(kind.rawValue) AND state IN ('available', 'running')", logger: log)
            .collect().first?.decode(Int.self) ?? 0
    }

    /// Finished tasks are kept a day (their keys still refuse a repeat), then deleted; a
    /// recording's uploads as long as its job (GET's `uploads` and `job.finished` name them).
    func pruneTasks() async throws {
        try await client.query("""
            DELETE FROM tasks t WHERE t.state IN ('completed', 'discarded') AND t.finished < now() - interval '1 day'
                AND (t.kind <> 'upload' OR NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = t.job_id))
            """, logger: log)
    }

    // MARK: - Rows

    /// A decision about a task `claimer` holds, as one guarded statement.
    private func write(_ decision: Tasks.Decision, to id: Int64, claimer: String, _ connection: PostgresConnection) async throws {
        // $1 the task, $2 its claimer; the decision's values from $3.
        var set = "claimed_by = NULL, claimed_session = NULL, claim_until = NULL"
        var binds = PostgresBindings()
        binds.append(id)
        binds.append(claimer)
        switch decision {
        case .keep, .complete:
            return
        case .release:
            set += ", state = 'available'"
        case .retry(let at, let attempts, let why):
            set += ", state = 'available', attempts = $3, last_error = $4, run_at = to_timestamp($5::double precision / 1e6)"
            binds.append(attempts)
            binds.append(why)
            binds.append(at.micros)
        case .discard(let attempts, let why, _):
            set += ", state = 'discarded', finished = now(), attempts = $3, last_error = $4"
            binds.append(attempts)
            binds.append(why)
        }
        let query = PostgresQuery(unsafeSQL: "UPDATE tasks SET \(set) WHERE id = $1 AND state = 'running' AND claimed_by = $2", binds: binds)
        try await connection.query(query, logger: log)
    }

    /// A task's columns, for `task(_:)` (8 columns).
    static let taskColumns = "t.id, t.kind, t.key, t.job_id, t.seq, t.args::text, t.payload, t.attempts"

    /// What the policy reads of a claimed task `t` with its claimer's session `s` (6 columns).
    static let claimedColumns = """
        t.kind, t.attempts, (extract(epoch FROM t.created) * 1e6)::bigint, (extract(epoch FROM t.claim_until) * 1e6)::bigint,
        (extract(epoch FROM s.gone_since) * 1e6)::bigint, (extract(epoch FROM now()) * 1e6)::bigint
        """

    static func task(_ row: PostgresRow) throws -> QueuedTask {
        let (id, kind, key, job, seq, args, payload, attempts) = try row.decode((Int64, String, String, String?, Int?, String, String?, Int).self)
        guard let kind = TaskKind(rawValue: kind) else { throw TaskRowError(description: "task \(id) is of kind \(kind), which this version does not know") }
        return QueuedTask(id: id, kind: kind, key: key, job: job, seq: seq, args: (try? decoder.decode([String: String].self, from: Data(args.utf8))) ?? [:],
                          payload: payload, attempts: attempts)
    }

    static func claimed(_ row: PostgresRow, from column: Int) throws -> (Tasks.Claimed, now: DatabaseInstant) {
        let cells = row.makeRandomAccess()
        func cell<T: PostgresDecodable>(_ i: Int, _: T.Type) throws -> T { try cells[i + column].decode(T.self) }
        let kind = try cell(0, String.self)
        guard let known = TaskKind(rawValue: kind) else { throw TaskRowError(description: "a task of kind \(kind), which this version does not know") }
        let claimed = Tasks.Claimed(kind: known, attempts: try cell(1, Int.self), created: DatabaseInstant(micros: try cell(2, Int64.self)),
                                    claimUntil: DatabaseInstant(micros: try cell(3, Int64?.self) ?? 0),
                                    claimerGoneSince: try cell(4, Int64?.self).map(DatabaseInstant.init))
        return (claimed, DatabaseInstant(micros: try cell(5, Int64.self)))
    }
}

/// A row of `tasks` this version cannot work (a newer instance's kind): left for one that can.
struct TaskRowError: Error, CustomStringConvertible {
    let description: String
}
