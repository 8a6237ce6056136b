import Foundation
import PostgresNIO

/// The instances' own sessions (`ClusterLiveness`), as the other instances see them.
extension ClusterStore {
    /// Marks the sessions whose advisory lock nobody holds any more as gone, now (the
    /// database's clock), and answers their instances. Trying the lock for the length of this
    /// statement is how one session asks whether another still lives: PostgreSQL frees a
    /// session's locks the moment it ends it. A session of this instance's pool never holds one.
    func sweepSessions() async throws -> [String] {
        let rows = try await client.query("""
            UPDATE instance_sessions SET gone_since = now() WHERE gone_since IS NULL AND pg_try_advisory_xact_lock(key) RETURNING instance
            """, logger: log).collect()
        return try rows.map { try $0.decode(String.self) }
    }

    /// Forgets sessions gone for a day that no active job names.
    func pruneSessions() async throws {
        try await client.query("""
            DELETE FROM instance_sessions s WHERE gone_since < now() - interval '1 day'
                AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.owner_session = s.key AND j.state IN ('running', 'paused', 'stopping'))
            """, logger: log)
    }
}
