import Bot
import Foundation
import Logging
import PostgresNIO
import Proof

/// Jobs, their owners and leases in PostgreSQL (`--database`): every query the cluster makes,
/// and nothing else. Times are the database's (`now()`), never an instance's wall clock; the
/// instance measures its own lease with its monotonic clock (`LeaseFence`).
struct ClusterStore: Sendable {
    let client: PostgresClient
    let instance: String
    let lease: Duration
    let log: Logger
    /// The settings of the instance's own session (`ClusterLiveness`).
    let session: PostgresConnection.Configuration
    /// `--webhook-url` is given: events are queued as `webhook` tasks (ClusterStore+Webhooks).
    var webhooks = false
    /// The task queue's one retry policy (ClusterStore+Tasks): the webhook outbox's schedule.
    var taskPolicy = TaskPolicy<DatabaseInstant>(schedule: TaskPolicy<DatabaseInstant>.standardSchedule)

    /// One channel; payloads `new <id>`, `stop <id>`, `released`.
    static let channel = "sfubot_jobs"

    var leaseSeconds: Double { Self.seconds(lease) }

    /// A duration as the seconds a query's `make_interval` takes.
    static func seconds(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18 }

    /// A job as the database holds it.
    struct Row: Sendable {
        var id: String
        var spec: JobSpec
        var created: Date
        var resumes: Int
        var owner: String?
        var outcome: Job.Outcome?
        var status: JobStatus?
        /// Its owner's lease ran out and nobody has taken it yet.
        var orphaned = false
        /// Playback: seconds into its file at the last renewal.
        var position: Double?
        /// Recording: its proof chain's newest checkpoint at the last renewal.
        var chainHead: ChainLink?
        var state: Lifecycle.State = .queued
    }

    /// A job this instance just took: new, or another's whose lease ran out.
    struct Claim: Sendable {
        var row: Row
        var previous: String?
        /// The previous owner's lease had run out (else its database session had ended).
        var expired = true
        /// The instance that held the job last: `previous`, or the one that released it.
        var lastOwner: String?
    }

    static let encoder: JSONEncoder = {
        let e = JSONEncoder()
        e.dateEncodingStrategy = .iso8601
        e.outputFormatting = [.sortedKeys]
        return e
    }()
    static let decoder: JSONDecoder = {
        let d = JSONDecoder()
        d.dateDecodingStrategy = .iso8601
        return d
    }()

    /// Other active jobs' folders and mixes (for the overlap check of a new recording).
    func activePaths() async throws -> [(id: String, room: Int64, paths: [String])] {
        var out: [(String, Int64, [String])] = []
        let rows = try await client.query("SELECT id, spec::text FROM jobs WHERE state NOT IN ('uploading', 'done', 'failed')", logger: log)
        for try await (id, json) in rows.decode((String, String).self) {
            guard let spec = try? Self.decoder.decode(JobSpec.self, from: Data(json.utf8)) else { continue }
            out.append((id, spec.room, [spec.out, spec.mix].compactMap { $0 }))
        }
        return out
    }

    /// Takes the oldest job that waits, whose owner's lease ran out, or whose owner's database
    /// session has been gone for `grace`, if any, under this instance's `session` (JobLifecycle:
    /// `claim`, `takeOver`; a job asked to stop that nobody writes is settled on the way,
    /// `settleStop`). Two instances never take the same one: the row is locked (`FOR UPDATE
    /// SKIP LOCKED`) until the owner and its history entry are written.
    func claim(session: Int64, grace: Duration) async throws -> Claim? {
        let graceSeconds = Self.seconds(grace)
        let life = lifecycle(grace: grace)
        // Settling an orphaned stop is no claim: look again, a few times.
        for _ in 0..<8 {
            let found = try await client.withTransaction(logger: log) { connection -> (Claim?, again: Bool) in
                var select: PostgresQuery = "SELECT j.id, "
                select.sql += Self.lifecycleColumns
                select.sql += """
                     FROM jobs j WHERE (j.state = 'queued' OR (j.state IN ('running', 'paused', 'stopping') AND (j.owner IS NULL OR j.lease_until < now()
                        OR j.owner_session IN (SELECT key FROM instance_sessions WHERE gone_since < now() - make_interval(secs => $1)))))
                        AND NOT j.refused ? $2
                    ORDER BY j.created LIMIT 1 FOR UPDATE OF j SKIP LOCKED
                    """
                select.binds.append(graceSeconds)
                // Not one this instance could not run (ClusterStore+Refusal).
                select.binds.append(instance)
                guard let row = try await connection.query(select, logger: log).collect().first else { return (nil, false) }
                let id = try row.makeRandomAccess()[0].decode(String.self)
                let (job, now) = try Self.lifecycleJob(row, from: 1)
                guard case .apply(let step) = life.decide(.claim, job, at: now) else { return (nil, false) }
                if step.transition == .settleStop {
                    try await apply(step, to: id, connection)
                    log.info("job \(id): asked to stop and no owner writes it: ended (done)")
                    return (nil, true)
                }
                return (try await take(id, step, previous: job.owner, expired: job.leaseUntil.map { $0 < now } ?? true, session: session, connection), false)
            }
            if found.0 != nil || !found.again { return found.0 }
        }
        return nil
    }

    /// `claim` or `takeOver` of the locked row `id`, and its history entry.
    private func take(_ id: String, _ step: Lifecycle.Step, previous: String?, expired: Bool, session: Int64,
                      _ connection: PostgresConnection) async throws -> Claim? {
        let rows = try await connection.query("""
            UPDATE jobs j SET state = \(step.to.rawValue)::job_state, owner = \(instance), owner_session = \(session),
                lease_until = now() + make_interval(secs => \(leaseSeconds)),
                resumes = j.resumes + CASE WHEN EXISTS (SELECT 1 FROM job_owners o WHERE o.job_id = j.id) THEN 1 ELSE 0 END
            WHERE j.id = \(id) AND j.state::text = ANY(\(step.transition.from.map(\.rawValue)))
            RETURNING j.id, j.spec::text, j.created, j.resumes, j.position_seconds, j.status::text, j.chain_head::text,
                (SELECT owner FROM job_owners o WHERE o.job_id = j.id ORDER BY seq DESC LIMIT 1)
            """, logger: log)
        var claim: Claim?
        for try await (id, json, created, resumes, position, status, head, last) in
            rows.decode((String, String, Date, Int, Double?, String?, String?, String?).self) {
            let spec = try Self.decoder.decode(JobSpec.self, from: Data(json.utf8))
            // The last status its previous owner published: a paused job is taken up paused.
            let shown = status.flatMap { try? Self.decoder.decode(JobStatus.self, from: Data($0.utf8)) }
            claim = Claim(row: Row(id: id, spec: spec, created: created, resumes: resumes, owner: instance, status: shown, position: position,
                                   chainHead: head.flatMap { try? Self.decoder.decode(ChainLink.self, from: Data($0.utf8)) }, state: step.to),
                          previous: step.transition == .takeOver ? previous : nil, expired: expired, lastOwner: last)
        }
        guard let claim else { return nil }
        // The one before ends where its lease or its session did (it stopped writing before that).
        try await connection.query("""
            UPDATE job_owners SET ended = now(), end_cause = \(claim.expired ? "lease expired" : "session ended") WHERE job_id = \(claim.row.id) AND ended IS NULL
            """, logger: log)
        let cause = claim.previous != nil ? "failover" : (claim.row.resumes > 0 ? "released" : "new")
        try await connection.query("""
            INSERT INTO job_owners (job_id, seq, owner, cause, started)
            SELECT \(claim.row.id), coalesce(max(seq), 0) + 1, \(instance), \(cause), now() FROM job_owners WHERE job_id = \(claim.row.id)
            """, logger: log)
        return claim
    }

    /// Renews the lease of `ids` (`renew`: while this instance holds them); answers the ones
    /// still this instance's (the others it lost) and those asked to stop.
    func renew(_ ids: [String]) async throws -> (kept: Set<String>, stopAsked: Set<String>) {
        let from = Lifecycle.Transition.renew.from.map(\.rawValue)
        let rows = try await client.query("""
            UPDATE jobs SET lease_until = now() + make_interval(secs => \(leaseSeconds))
            WHERE owner = \(instance) AND id = ANY(\(ids)) AND state::text = ANY(\(from)) RETURNING id, state = 'stopping'
            """, logger: log)
        var kept = Set<String>(), stop = Set<String>()
        for try await (id, asked) in rows.decode((String, Bool).self) {
            kept.insert(id)
            if asked { stop.insert(id) }
        }
        return (kept, stop)
    }

    /// What the owner shows of a running job, for the other instances' GET.
    func publish(_ status: JobStatus, position: Double? = nil, chainHead: ChainLink? = nil) async throws {
        let json = String(decoding: try Self.encoder.encode(status), as: UTF8.self)
        let head = try chainHead.map { String(decoding: try Self.encoder.encode($0), as: UTF8.self) }
        try await client.query("""
            UPDATE jobs SET status = \(json)::jsonb, position_seconds = coalesce(\(position), position_seconds),
                chain_head = coalesce(\(head)::jsonb, chain_head) WHERE id = \(status.id) AND owner = \(instance) AND state IN ('running', 'paused', 'stopping')
            """, logger: log)
    }

    /// The end of a job this instance ran (`end`, or `retry` after a failed attempt): answers
    /// the decision, `.refused` once another instance holds it (its next owner writes its end).
    @discardableResult
    func end(_ id: String, _ outcome: Job.Outcome, status: JobStatus?, retry: Bool = false) async throws -> Lifecycle.Decision {
        let result: Lifecycle.Outcome = outcome.state == .failed ? .failed : .done
        return try await transition(id, retry ? .retry(result) : .end(result), grace: .zero,
                                    ending: Ending(ended: outcome.ended, error: outcome.error, status: status))
    }

    /// Pause or resume of a job this instance runs, once its pause gate has changed.
    @discardableResult
    func setPaused(_ id: String, _ paused: Bool) async throws -> Lifecycle.Decision {
        try await transition(id, paused ? .pause : .resume, grace: .zero)
    }

    /// Jobs this instance stops at its shutdown (`release`): free for the others at once.
    func release(_ ids: [String]) async throws {
        guard !ids.isEmpty else { return }
        let life = lifecycle(grace: .zero)
        try await client.withTransaction(logger: log) { connection in
            for id in ids {
                guard let (job, now) = try await locked(id, connection), case .apply(let step) = life.decide(.release, job, at: now) else { continue }
                try await apply(step, to: id, connection)
            }
        }
        try await client.query("SELECT pg_notify(\(Self.channel), 'released')", logger: log)
    }

    enum StopAsked { case noSuchJob, ended, settled, owner(String) }

    /// DELETE on any instance (`askStop`, `settleStop`): a job no one runs ends here; a running
    /// one's owner is told.
    func requestStop(_ id: String, grace: Duration) async throws -> StopAsked {
        let decision = try await transition(id, .stop, grace: grace)
        switch decision {
        case .refused: return .noSuchJob
        case .apply(let step) where step.tell != nil:
            try await client.query("SELECT pg_notify(\(Self.channel), \("stop " + id))", logger: log)
            return .owner(step.tell!)
        case .apply: return .settled
        case .unchanged, .stopWriting: return .ended
        }
    }

    /// Tells every instance (the job's owner acts on it).
    func notify(_ payload: String) async throws {
        try await client.query("SELECT pg_notify(\(Self.channel), \(payload))", logger: log)
    }

    func row(_ id: String) async throws -> Row? {
        try await rows("WHERE id = \(id)").first
    }

    /// A page of one kind, oldest first, and whether more follow.
    func page(_ kind: JobSpec.Kind, limit: Int, after: String?) async throws -> (rows: [Row], more: Bool)? {
        if let after {
            guard try await row(after) != nil else { return nil }
            let found = try await rows("""
                WHERE kind = \(kind.rawValue) AND (created, id) > (SELECT created, id FROM jobs WHERE id = \(after)) ORDER BY created, id LIMIT \(limit + 1)
                """)
            return (Array(found.prefix(limit)), found.count > limit)
        }
        let found = try await rows("WHERE kind = \(kind.rawValue) ORDER BY created, id LIMIT \(limit + 1)")
        return (Array(found.prefix(limit)), found.count > limit)
    }

    private func rows(_ condition: PostgresQuery) async throws -> [Row] {
        var query: PostgresQuery = "SELECT id, spec::text, created, resumes, owner, final_state, ended, error, status::text, state::text, "
        // Orphaned: held, and its lease ran out or its owner's session is gone (taken within the grace).
        query.sql += "state IN ('running', 'paused', 'stopping') AND (owner IS NULL OR coalesce(lease_until < now(), false) "
        query.sql += "OR EXISTS (SELECT 1 FROM instance_sessions s WHERE s.key = owner_session AND s.gone_since IS NOT NULL)) FROM jobs "
        query.sql += condition.sql
        query.binds = condition.binds
        var out: [Row] = []
        let rows = try await client.query(query, logger: log)
        for try await (id, json, created, resumes, owner, state, ended, error, status, named, expired) in
            rows.decode((String, String, Date, Int, String?, String?, Date?, String?, String?, String, Bool).self) {
            let spec = try Self.decoder.decode(JobSpec.self, from: Data(json.utf8))
            let outcome = state.flatMap(Job.State.init(rawValue:)).map { Job.Outcome(state: $0, ended: ended ?? created, error: error) }
            let shown = status.flatMap { try? Self.decoder.decode(JobStatus.self, from: Data($0.utf8)) }
            out.append(Row(id: id, spec: spec, created: created, resumes: resumes, owner: owner, outcome: outcome, status: shown,
                           orphaned: expired, state: Lifecycle.State(rawValue: named) ?? .failed))
        }
        return out
    }

    /// Every owner of `ids`, in order.
    func owners(_ ids: [String]) async throws -> [String: [JobStatus.Owner]] {
        var out: [String: [JobStatus.Owner]] = [:]
        let rows = try await client.query("""
            SELECT job_id, owner, cause, started, ended, end_cause FROM job_owners WHERE job_id = ANY(\(ids)) ORDER BY job_id, seq
            """, logger: log)
        for try await (id, owner, cause, started, ended, endCause) in rows.decode((String, String, String, Date, Date?, String?).self) {
            out[id, default: []].append(.init(instance: owner, cause: cause, since: started, until: ended, endCause: endCause))
        }
        return out
    }

    /// Forgets jobs that ended before `cutoff` (their recordings stay), but not a recording
    /// still `uploading`: its folders and files are still on their way.
    func prune(before cutoff: Date) async throws {
        try await client.query("""
            DELETE FROM jobs WHERE state IN ('done', 'failed') AND ended < \(cutoff)
            """, logger: log)
        try await pruneSessions()
        try await pruneTasks()
    }
}
