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

    func insert(id: String, spec: JobSpec, created: Date) async throws {
        let json = String(decoding: try Self.encoder.encode(spec), as: UTF8.self)
        try await client.query("""
            INSERT INTO jobs (id, kind, spec, out_folder, created) VALUES (\(id), \(spec.kind.rawValue), \(json)::jsonb, \(spec.out), \(created))
            """, logger: log)
        try await client.query("SELECT pg_notify(\(Self.channel), \("new " + id))", logger: log)
    }

    /// Other active jobs' folders and mixes (for the overlap check of a new recording).
    func activePaths() async throws -> [(id: String, room: Int64, paths: [String])] {
        var out: [(String, Int64, [String])] = []
        let rows = try await client.query("SELECT id, spec::text FROM jobs WHERE final_state IS NULL", logger: log)
        for try await (id, json) in rows.decode((String, String).self) {
            guard let spec = try? Self.decoder.decode(JobSpec.self, from: Data(json.utf8)) else { continue }
            out.append((id, spec.room, [spec.out, spec.mix].compactMap { $0 }))
        }
        return out
    }

    /// Takes the oldest job that waits, whose owner's lease ran out, or whose owner's database
    /// session has been gone for `grace`, if any, under this instance's `session`. Two
    /// instances never take the same one: the row is locked (`FOR UPDATE SKIP LOCKED`) until
    /// the owner and its history entry are written.
    func claim(session: Int64, grace: Duration) async throws -> Claim? {
        let graceSeconds = Self.seconds(grace)
        return try await client.withTransaction(logger: log) { connection -> Claim? in
            let rows = try await connection.query("""
                WITH next AS (
                    SELECT id, owner AS previous, coalesce(lease_until < now(), true) AS expired FROM jobs
                    WHERE final_state IS NULL AND NOT stop_requested AND (owner IS NULL OR lease_until < now()
                        OR owner_session IN (SELECT key FROM instance_sessions WHERE gone_since < now() - make_interval(secs => \(graceSeconds))))
                    ORDER BY created LIMIT 1 FOR UPDATE SKIP LOCKED)
                UPDATE jobs j SET owner = \(instance), owner_session = \(session), lease_until = now() + make_interval(secs => \(leaseSeconds)),
                    resumes = j.resumes + CASE WHEN EXISTS (SELECT 1 FROM job_owners o WHERE o.job_id = j.id) THEN 1 ELSE 0 END
                FROM next WHERE j.id = next.id
                RETURNING j.id, j.spec::text, j.created, j.resumes, next.previous, j.position_seconds, j.status::text, j.chain_head::text, next.expired,
                    (SELECT owner FROM job_owners o WHERE o.job_id = j.id ORDER BY seq DESC LIMIT 1)
                """, logger: log)
            var claim: Claim?
            for try await (id, json, created, resumes, previous, position, status, head, expired, last) in
                rows.decode((String, String, Date, Int, String?, Double?, String?, String?, Bool, String?).self) {
                let spec = try Self.decoder.decode(JobSpec.self, from: Data(json.utf8))
                // The last status its previous owner published: a paused job is taken up paused.
                let shown = status.flatMap { try? Self.decoder.decode(JobStatus.self, from: Data($0.utf8)) }
                claim = Claim(row: Row(id: id, spec: spec, created: created, resumes: resumes, owner: instance, status: shown, position: position,
                                           chainHead: head.flatMap { try? Self.decoder.decode(ChainLink.self, from: Data($0.utf8)) }),
                              previous: previous, expired: expired, lastOwner: last)
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
    }

    /// Renews the lease of `ids`; answers the ones still this instance's (the others it lost)
    /// and those asked to stop.
    func renew(_ ids: [String]) async throws -> (kept: Set<String>, stopAsked: Set<String>) {
        let rows = try await client.query("""
            UPDATE jobs SET lease_until = now() + make_interval(secs => \(leaseSeconds))
            WHERE owner = \(instance) AND id = ANY(\(ids)) AND final_state IS NULL RETURNING id, stop_requested
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
                chain_head = coalesce(\(head)::jsonb, chain_head) WHERE id = \(status.id) AND owner = \(instance) AND final_state IS NULL
            """, logger: log)
    }

    /// The job's end, written by its owner (`byOwner`: only while it still is), or by anyone
    /// for a job no one runs.
    func finish(_ id: String, _ outcome: Job.Outcome, status: JobStatus?, endCause: String = "finished", byOwner: Bool = true) async throws {
        let json = status.map { String(decoding: (try? Self.encoder.encode($0)) ?? Data(), as: UTF8.self) }
        try await client.withTransaction(logger: log) { connection in
            try await connection.query("""
                UPDATE jobs SET final_state = \(outcome.state.rawValue), ended = \(outcome.ended), error = \(outcome.error),
                    status = coalesce(\(json)::jsonb, status), lease_until = NULL
                WHERE id = \(id) AND final_state IS NULL AND (NOT \(byOwner) OR owner = \(instance))
                """, logger: log)
            try await connection.query("""
                UPDATE job_owners SET ended = now(), end_cause = \(endCause) WHERE job_id = \(id) AND ended IS NULL AND (NOT \(byOwner) OR owner = \(instance))
                """, logger: log)
        }
    }

    /// Jobs this instance stops at its shutdown: free for the others at once.
    func release(_ ids: [String]) async throws {
        guard !ids.isEmpty else { return }
        try await client.withTransaction(logger: log) { connection in
            try await connection.query("UPDATE jobs SET owner = NULL, lease_until = NULL WHERE owner = \(instance) AND id = ANY(\(ids)) AND final_state IS NULL", logger: log)
            try await connection.query("UPDATE job_owners SET ended = now(), end_cause = 'released' WHERE owner = \(instance) AND job_id = ANY(\(ids)) AND ended IS NULL", logger: log)
        }
        try await client.query("SELECT pg_notify(\(Self.channel), 'released')", logger: log)
    }

    enum StopAsked { case noSuchJob, ended, settled, owner(String) }

    /// DELETE on any instance: a job no one runs ends here; a running one's owner is told.
    func requestStop(_ id: String) async throws -> StopAsked {
        // Read to the end before the next query: a sequence left half read holds its connection.
        let rows = try await client.query("""
            UPDATE jobs SET stop_requested = true WHERE id = \(id) RETURNING final_state IS NOT NULL, owner, coalesce(lease_until > now(), false)
            """, logger: log).collect()
        for row in rows {
            let (ended, owner, leased) = try row.decode((Bool, String?, Bool).self)
            if ended { return .ended }
            if let owner, leased {
                try await client.query("SELECT pg_notify(\(Self.channel), \("stop " + id))", logger: log)
                return .owner(owner)
            }
            // Waiting, or its owner's lease ran out (a claim skips jobs asked to stop).
            try await finish(id, .init(state: .done, ended: Date(), error: nil), status: nil, endCause: "stopped", byOwner: false)
            return .settled
        }
        return .noSuchJob
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
        var query: PostgresQuery = "SELECT id, spec::text, created, resumes, owner, final_state, ended, error, status::text, "
        // Orphaned: its lease ran out, or its owner's session is gone (taken within the grace).
        query.sql += "coalesce(lease_until < now(), false) OR EXISTS (SELECT 1 FROM instance_sessions s WHERE s.key = owner_session AND s.gone_since IS NOT NULL) FROM jobs "
        query.sql += condition.sql
        query.binds = condition.binds
        var out: [Row] = []
        let rows = try await client.query(query, logger: log)
        for try await (id, json, created, resumes, owner, state, ended, error, status, expired) in
            rows.decode((String, String, Date, Int, String?, String?, Date?, String?, String?, Bool).self) {
            let spec = try Self.decoder.decode(JobSpec.self, from: Data(json.utf8))
            let outcome = state.flatMap(Job.State.init(rawValue:)).map { Job.Outcome(state: $0, ended: ended ?? created, error: error) }
            let shown = status.flatMap { try? Self.decoder.decode(JobStatus.self, from: Data($0.utf8)) }
            out.append(Row(id: id, spec: spec, created: created, resumes: resumes, owner: owner, outcome: outcome, status: shown,
                           orphaned: owner != nil && outcome == nil && expired))
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
    /// whose uploads have not finished: its folders and files are still on their way.
    func prune(before cutoff: Date) async throws {
        try await client.query("""
            DELETE FROM jobs j WHERE final_state IS NOT NULL AND ended < \(cutoff)
                AND (uploads_finished IS NOT NULL OR NOT EXISTS (SELECT 1 FROM job_owners o WHERE o.job_id = j.id AND o.folder_id IS NOT NULL))
            """, logger: log)
        try await pruneSessions()
    }
}
