import Foundation
import PostgresNIO

/// A POST with `--database`: admitted while the live instances have room together, as one
/// instance admits within its own `--max-jobs`; queued for whichever takes it.
extension ClusterStore {
    /// Every live instance runs its `--max-jobs`: the jobs not ended fill them all.
    struct Full: Error {
        var capacity: Int
    }

    /// A new job, queued, if the jobs not ended leave room on the live instances together
    /// (their `--max-jobs`, as each session announced it); else `Full`. Two POSTs at once are
    /// admitted one after the other (an advisory lock to the transaction's end).
    func insert(id: String, spec: JobSpec, created: Date) async throws {
        let json = String(decoding: try Self.encoder.encode(spec), as: UTF8.self)
        // The transaction wraps what its body threw: the caller tells `Full` and a taken folder apart.
        do { try await admit(id: id, spec: spec, json: json, created: created) } catch let e as PostgresTransactionError { throw e.closureError ?? e }
        try await client.query("SELECT pg_notify(\(Self.channel), \("new " + id))", logger: log)
    }

    private func admit(id: String, spec: JobSpec, json: String, created: Date) async throws {
        try await client.withTransaction(logger: log) { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(727275)", logger: log)
            // An instance with two live sessions (one about to be seen gone) counts once.
            let room = try await connection.query("""
                SELECT (SELECT sum(m)::bigint FROM (SELECT max(max_jobs) AS m FROM instance_sessions WHERE gone_since IS NULL GROUP BY instance) i),
                    (SELECT count(*) FROM jobs WHERE state IN ('queued', 'running', 'paused', 'stopping'))
                """, logger: log).collect()
            if let row = room.first {
                let (capacity, active) = try row.decode((Int?, Int).self)
                // No instance announced one (all older than step 7): admitted, as before.
                if let capacity, active >= capacity { throw Full(capacity: capacity) }
            }
            try await connection.query("""
                INSERT INTO jobs (id, kind, spec, out_folder, created) VALUES (\(id), \(spec.kind.rawValue), \(json)::jsonb, \(spec.out), \(created))
                """, logger: log)
        }
    }

    /// Jobs waiting for an instance with room.
    func waiting() async throws -> Int {
        try await client.query("SELECT count(*) FROM jobs WHERE state = 'queued'", logger: log).collect().first?.decode(Int.self) ?? 0
    }
}
