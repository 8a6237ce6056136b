import Foundation
import ObjectStore
import PostgresNIO

/// A recording's uploads as the cluster knows them (`job_uploads`, migration step 5): every
/// instance answers GET's `uploads` from here, an instance uploads only the files the table
/// says are its own, and one whose session is gone has its pending files taken by another.
extension ClusterStore {
    /// One file of a recording, as queued.
    struct UploadRow: Sendable {
        var job: String
        var key: String
        /// Its path in the recording's folder.
        var name: String
        /// Where the uploader reads it.
        var file: String
        /// A file only the uploader's state directory holds (the merged manifest), inline.
        var content: String?
    }

    /// Writes a recording's files as this instance's to upload, under `session`. A file
    /// already there (queued again after a crash) keeps its row.
    func queueUploads(_ rows: [UploadRow], failedJob: Bool, session: Int64?) async throws {
        try await client.withTransaction(logger: log) { connection in
            for row in rows {
                try await connection.query("""
                    INSERT INTO job_uploads (job_id, key, name, file, content, failed_job, uploader, uploader_session)
                    VALUES (\(row.job), \(row.key), \(row.name), \(row.file), \(row.content), \(failedJob), \(instance), \(session))
                    ON CONFLICT (job_id, key) DO NOTHING
                    """, logger: log)
            }
        }
    }

    enum UploadTurn: Sendable, Equatable {
        /// Pending and this instance's (or unknown to the table: queued before it existed).
        case mine
        /// Settled, or taken by another instance: this instance's entry is dropped.
        case notMine(String)
    }

    func uploadTurn(job: String, key: String) async throws -> UploadTurn {
        let rows = try await client.query("SELECT uploader, state FROM job_uploads WHERE job_id = \(job) AND key = \(key)", logger: log).collect()
        guard let row = rows.first else { return .mine }
        let (uploader, state) = try row.decode((String, String).self)
        if state != "pending" { return .notMine("already \(state) (by \(uploader))") }
        return uploader == instance ? .mine : .notMine("taken over by \(uploader)")
    }

    /// What `job.finished` names, for the one instance that settled a recording's last file.
    struct FinishedUploads: Sendable {
        var kind: String
        var room: Int64
        var failedJob: Bool
        /// Every file in its batch's order (by name), with its object; nil: missing.
        var files: [(name: String, object: UploadedObject?)]
    }

    /// A file of this instance's verified in the store (`object`), or given up (nil: its file
    /// is gone). Answers the recording's files when this settled the last pending one.
    func settleUpload(job: String, key: String, object: UploadedObject?) async throws -> FinishedUploads? {
        let json = try object.map { String(decoding: try Self.encoder.encode($0), as: UTF8.self) }
        return try await client.withTransaction(logger: log) { connection -> FinishedUploads? in
            try await connection.query("""
                UPDATE job_uploads SET state = \(object == nil ? "missing" : "uploaded"), object = \(json)::jsonb, updated = now()
                WHERE job_id = \(job) AND key = \(key) AND uploader = \(instance) AND state = 'pending'
                """, logger: log)
            // Once: the row's lock orders two instances settling a job's last files together.
            let done = try await connection.query("""
                UPDATE jobs SET uploads_finished = now() WHERE id = \(job) AND uploads_finished IS NULL
                    AND NOT EXISTS (SELECT 1 FROM job_uploads WHERE job_id = \(job) AND state = 'pending')
                RETURNING kind, (spec->>'room')::bigint
                """, logger: log).collect()
            guard let first = done.first else { return nil }
            let (kind, room) = try first.decode((String, Int64).self)
            var finished = FinishedUploads(kind: kind, room: room, failedJob: false, files: [])
            let rows = try await connection.query("SELECT name, object::text, failed_job FROM job_uploads WHERE job_id = \(job) ORDER BY name", logger: log)
            for try await (name, object, failed) in rows.decode((String, String?, Bool).self) {
                finished.failedJob = finished.failedJob || failed
                finished.files.append((name, object.flatMap { try? Self.decoder.decode(UploadedObject.self, from: Data($0.utf8)) }))
            }
            return finished
        }
    }

    func uploadFailed(job: String, key: String, why: String) async throws {
        try await client.query("""
            UPDATE job_uploads SET attempts = attempts + 1, last_error = \(why), updated = now()
            WHERE job_id = \(job) AND key = \(key) AND uploader = \(instance) AND state = 'pending'
            """, logger: log)
    }

    /// A recording's uploads as GET shows them (nil: none queued).
    func uploads(of job: String) async throws -> JobStatus.Uploads? {
        let rows = try await client.query("""
            SELECT count(*) FILTER (WHERE state = 'pending'), count(*) FILTER (WHERE state = 'uploaded'), count(*) FILTER (WHERE state = 'missing'),
                coalesce(sum(attempts), 0), (SELECT last_error FROM job_uploads WHERE job_id = \(job) AND state = 'pending' AND last_error IS NOT NULL
                                             ORDER BY updated DESC LIMIT 1), count(*)
            FROM job_uploads WHERE job_id = \(job)
            """, logger: log).collect()
        guard let row = rows.first else { return nil }
        let (pending, uploaded, missing, tries, lastError, all) = try row.decode((Int, Int, Int, Int, String?, Int).self)
        guard all > 0 else { return nil }
        return JobStatus.Uploads(pending: pending, uploaded: uploaded, missing: missing, failedTries: tries, lastError: lastError)
    }

    /// Takes the pending files of uploaders whose session has been gone for `grace` (their
    /// process died, or lost the database: their own queue may still hold them, and drops
    /// them once it sees they are no longer its own).
    func takeUploads(session: Int64, grace: Duration) async throws -> [(row: UploadRow, from: String)] {
        let graceSeconds = Double(grace.components.seconds) + Double(grace.components.attoseconds) / 1e18
        let rows = try await client.query("""
            WITH gone AS (SELECT job_id, key, uploader FROM job_uploads WHERE state = 'pending'
                          AND uploader_session IN (SELECT key FROM instance_sessions WHERE gone_since < now() - make_interval(secs => \(graceSeconds)))
                          FOR UPDATE SKIP LOCKED)
            UPDATE job_uploads u SET uploader = \(instance), uploader_session = \(session), updated = now()
            FROM gone WHERE u.job_id = gone.job_id AND u.key = gone.key
            RETURNING u.job_id, u.key, u.name, u.file, u.content, gone.uploader
            """, logger: log)
        var taken: [(UploadRow, String)] = []
        for try await (job, key, name, file, content, from) in rows.decode((String, String, String, String, String?, String).self) {
            taken.append((UploadRow(job: job, key: key, name: name, file: file, content: content), from))
        }
        return taken
    }
}
