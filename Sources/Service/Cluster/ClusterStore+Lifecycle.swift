import Foundation
import PostgresNIO
import Webhooks

/// An instant of the database's clock (`now()`, `lease_until`, `gone_since`), in microseconds:
/// the lifecycle decides on the database's times, never an instance's wall clock.
struct DatabaseInstant: InstantProtocol, Sendable {
    var micros: Int64
    func advanced(by d: Duration) -> DatabaseInstant {
        DatabaseInstant(micros: micros + d.components.seconds * 1_000_000 + d.components.attoseconds / 1_000_000_000_000)
    }
    func duration(to other: DatabaseInstant) -> Duration { .microseconds(other.micros - micros) }
    static func < (a: DatabaseInstant, b: DatabaseInstant) -> Bool { a.micros < b.micros }
}

/// The store's side of `JobLifecycle`: a job's row read under its lock, the reducer's decision,
/// and that decision applied as one statement guarded by the states it starts from.
extension ClusterStore {
    typealias Lifecycle = JobLifecycle<DatabaseInstant>

    func lifecycle(grace: Duration) -> Lifecycle { Lifecycle(instance: instance, grace: grace) }

    /// The columns a decision reads, for `rowSQL`'s rows.
    static let lifecycleColumns = """
        j.state::text, j.owner, (extract(epoch FROM j.lease_until) * 1e6)::bigint,
        (SELECT (extract(epoch FROM s.gone_since) * 1e6)::bigint FROM instance_sessions s WHERE s.key = j.owner_session),
        EXISTS (SELECT 1 FROM job_owners o WHERE o.job_id = j.id AND o.folder_id IS NOT NULL),
        coalesce((j.status->>'paused')::boolean, false), j.final_state, (extract(epoch FROM now()) * 1e6)::bigint
        """

    static func lifecycleJob(_ row: PostgresRow, from column: Int) throws -> (Lifecycle.Job, now: DatabaseInstant) {
        let cells = row.makeRandomAccess()
        func cell<T: PostgresDecodable>(_ i: Int, _: T.Type) throws -> T { try cells[i + column].decode(T.self) }
        let state = try cell(0, String.self)
        let job = Lifecycle.Job(state: Lifecycle.State(rawValue: state) ?? .failed, owner: try cell(1, String?.self),
                                leaseUntil: try cell(2, Int64?.self).map(DatabaseInstant.init),
                                ownerGoneSince: try cell(3, Int64?.self).map(DatabaseInstant.init),
                                hasFolders: try cell(4, Bool.self), publishedPaused: try cell(5, Bool.self),
                                outcome: try cell(6, String?.self).flatMap(Lifecycle.Outcome.init(rawValue:)))
        return (job, DatabaseInstant(micros: try cell(7, Int64.self)))
    }

    /// Job `id` locked to the transaction's end, as the lifecycle sees it; nil: no such job.
    func locked(_ id: String, _ connection: PostgresConnection) async throws -> (Lifecycle.Job, now: DatabaseInstant)? {
        var query: PostgresQuery = "SELECT "
        query.sql += Self.lifecycleColumns + " FROM jobs j WHERE j.id = $1 FOR UPDATE OF j"
        query.binds.append(id)
        guard let row = try await connection.query(query, logger: log).collect().first else { return nil }
        return try Self.lifecycleJob(row, from: 0)
    }

    /// What the end of a run writes beside the state.
    struct Ending: Sendable {
        var ended = Date()
        var error: String?
        var status: JobStatus?
        /// The run's `job_owners.end_cause`.
        var cause = "finished"
    }

    /// Applies `step` to job `id` as one statement: only from the states its transition starts
    /// from, and only while `step.owner` (if any) still holds it. Answers whether it matched.
    @discardableResult
    func apply(_ step: Lifecycle.Step, to id: String, ending: Ending = Ending(), _ connection: PostgresConnection) async throws -> Bool {
        let from = step.transition.from.map(\.rawValue)
        var query: PostgresQuery = "UPDATE jobs SET state = $1::job_state"
        query.binds.append(step.to.rawValue)
        switch step.transition {
        case .claim, .takeOver, .renew:
            preconditionFailure("\(step.transition) is applied by its own statement (claim, renew)")
        case .pause, .resume:
            break
        case .askStop:
            query.sql += ", stop_requested = true"
        case .release:
            query.sql += ", owner = NULL, owner_session = NULL, lease_until = NULL"
        case .settleStop, .end:
            let json = ending.status.flatMap { try? Self.encoder.encode($0) }.map { String(decoding: $0, as: UTF8.self) }
            query.sql += ", final_state = $2, ended = $3, error = $4, status = coalesce($5::jsonb, status), lease_until = NULL"
            query.sql += step.transition == .settleStop ? ", stop_requested = true" : ""
            query.binds.append((step.outcome ?? .done).rawValue)
            query.binds.append(ending.ended)
            query.binds.append(ending.error)
            query.binds.append(json)
        case .finishUploads:
            query.sql += ", uploads_finished = now()"
        }
        let n = query.binds.count
        query.sql += " WHERE id = $\(n + 1) AND state::text = ANY($\(n + 2)) AND ($\(n + 3)::text IS NULL OR owner = $\(n + 3))"
        query.sql += " RETURNING kind, (spec->>'room')::bigint"
        query.binds.append(id)
        query.binds.append(from)
        query.binds.append(step.owner)
        guard let row = try await connection.query(query, logger: log).collect().first else { return false }
        let (kind, room) = try row.decode((String, Int64?).self)
        try await endEvent(step, of: id, kind: kind, room: room ?? 0, ending: ending, connection)
        // The run ends with the job's end or its release; the next run's row is the claim's.
        let cause: String? = switch step.transition {
        case .settleStop: "stopped"
        case .end: ending.cause
        case .release: "released"
        default: nil
        }
        if let cause {
            try await connection.query("""
                UPDATE job_owners SET ended = now(), end_cause = \(cause) WHERE job_id = \(id) AND ended IS NULL AND (\(step.owner)::text IS NULL OR owner = \(step.owner))
                """, logger: log)
        }
        return true
    }

    /// The webhook an end causes, queued in the end's transaction: `job.failed` with the reason,
    /// or `job.finished` (no files) for a job stopped while nobody ran it (issue 44: a waiting
    /// job DELETEd). A recording still uploading gets its `job.finished` from its uploads.
    private func endEvent(_ step: Lifecycle.Step, of id: String, kind: String, room: Int64, ending: Ending, _ connection: PostgresConnection) async throws {
        guard webhooks else { return }
        let event: WebhookEvent
        switch step.transition {
        case .end where step.outcome == .failed:
            event = try WebhookEvent(.jobFailed, data: JobEvent(job: id, kind: kind, room: room, reason: ending.error ?? "failed"), id: "\(id).failed")
        case .settleStop where step.to == .done:
            event = try WebhookEvent(.jobFinished, data: JobEvent(job: id, kind: kind, room: room, files: []), id: "\(id).finished")
        default:
            return
        }
        try await enqueue(event, job: id, connection)
    }

    /// Decides `event` for job `id` under its row lock and applies the decision; answers it
    /// (`.refused("no such job")` for none).
    func transition(_ id: String, _ event: Lifecycle.Event, grace: Duration, ending: Ending = Ending()) async throws -> Lifecycle.Decision {
        try await client.withTransaction(logger: log) { connection -> Lifecycle.Decision in
            guard let (job, now) = try await locked(id, connection) else { return .refused("no such job") }
            let decision = lifecycle(grace: grace).decide(event, job, at: now)
            if case .apply(let step) = decision { try await apply(step, to: id, ending: ending, connection) }
            return decision
        }
    }
}
