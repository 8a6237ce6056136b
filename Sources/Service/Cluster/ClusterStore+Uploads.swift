import Foundation
import ObjectStore
import PostgresNIO
import Webhooks

/// A recording's uploads as the cluster knows them (`job_uploads`, `job_folders`, migration
/// step 5): every instance answers GET's `uploads` from here, an instance uploads only the
/// files the table says are its own, one whose session is gone has its pending files taken by
/// another, and each folder of a recording is queued once, by an instance that holds it.
extension ClusterStore {
    /// One file of a recording, as queued.
    struct UploadRow: Sendable {
        var job: String
        var key: String
        /// Its name in the recording (`part-N/` before it for an earlier owner's own disk).
        var name: String
        /// Where the uploader reads it.
        var file: String
        /// A file only the uploader's state directory holds (the merged manifest), inline.
        var content: String?
        /// The folder it is in (its marker's id); nil for the merged manifest.
        var folderID: String?
        var size: Int?
        var sha256: String?
    }

    /// This run's folder, in its owner row.
    func setFolder(job: String, folderID: String) async throws {
        try await client.query("""
            UPDATE job_owners SET folder_id = \(folderID) WHERE job_id = \(job) AND owner = \(instance) AND ended IS NULL
            """, logger: log)
    }

    enum FolderState: Sendable, Equatable {
        /// This folder is queued already.
        case done
        /// Given up by an operator while this instance was away (ClusterStore+Abandon), and why.
        case abandoned(String)
        /// The job is no longer in the database.
        case forgotten
        /// The job still runs: its folders are queued once it has ended.
        case active
        /// Ended: queue the folder under `prefix` (empty for the last owner's folder).
        case ended(prefix: String)
    }

    func folderState(job: String, folderID: String) async throws -> FolderState {
        let rows = try await client.query("""
            SELECT state IN ('uploading', 'done', 'failed'), EXISTS (SELECT 1 FROM job_folders WHERE job_id = \(job) AND folder_id = \(folderID)),
                (SELECT abandoned FROM job_folders WHERE job_id = \(job) AND folder_id = \(folderID)),
                (SELECT folder_id FROM job_owners WHERE job_id = \(job) ORDER BY seq DESC LIMIT 1),
                coalesce((SELECT min(seq) FROM job_owners WHERE job_id = \(job) AND folder_id = \(folderID)), 0)
            FROM jobs WHERE id = \(job)
            """, logger: log).collect()
        guard let row = rows.first else { return .forgotten }
        let (ended, queued, abandoned, last, first) = try row.decode((Bool, Bool, String?, String?, Int).self)
        if let abandoned { return .abandoned(abandoned) }
        if queued { return .done }
        guard ended else { return .active }
        return .ended(prefix: last == folderID ? "" : "part-\(first)/")
    }

    /// Queues a folder's files as this instance's, under `session`, unless another instance
    /// queued the same folder (shared storage): answers whether this one did.
    func queueFolder(job: String, folderID: String, folder: String, prefix: String, manifest: String?, rows: [UploadRow],
                     session: Int64?) async throws -> Bool {
        try await client.withTransaction(logger: log) { connection -> Bool in
            let won = try await connection.query("""
                INSERT INTO job_folders (job_id, folder_id, queued_by, folder, manifest, prefix)
                VALUES (\(job), \(folderID), \(instance), \(folder), \(manifest), \(prefix))
                ON CONFLICT (job_id, folder_id) DO NOTHING RETURNING 1
                """, logger: log).collect()
            guard !won.isEmpty else { return false }
            for row in rows { try await insert(row, session: session, connection) }
            return true
        }
    }

    /// The merged manifest's row; answers whether it was written now (not by another before).
    func queueMerged(_ row: UploadRow, session: Int64?) async throws -> Bool {
        try await client.withTransaction(logger: log) { connection -> Bool in
            try await insert(row, session: session, connection)
        }
    }

    @discardableResult
    private func insert(_ row: UploadRow, session: Int64?, _ connection: PostgresConnection) async throws -> Bool {
        !(try await connection.query("""
            INSERT INTO job_uploads (job_id, key, name, file, content, folder_id, size, sha256, uploader, uploader_session)
            VALUES (\(row.job), \(row.key), \(row.name), \(row.file), \(row.content), \(row.folderID), \(row.size), \(row.sha256), \(instance), \(session))
            ON CONFLICT (job_id, key) DO NOTHING RETURNING 1
            """, logger: log).collect().isEmpty)
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

    /// A failed try of a file this instance uploads, counted in its row; `event` makes the
    /// `upload.failed` that count calls for (nil: none), queued in the same transaction. The
    /// count is the table's, not the instance's: two instances that tried the file never queue
    /// one failure twice (issue 44), and a failure of a row not this instance's queues nothing.
    func uploadFailed(job: String, key: String, why: String, event: @Sendable (_ attempts: Int) -> WebhookEvent? = { _ in nil }) async throws {
        try await client.withTransaction(logger: log) { connection in
            let rows = try await connection.query("""
                UPDATE job_uploads SET attempts = attempts + 1, last_error = \(why), updated = now()
                WHERE job_id = \(job) AND key = \(key) AND uploader = \(instance) AND state = 'pending' RETURNING attempts
                """, logger: log).collect()
            guard let attempts = try rows.first?.decode(Int.self), let event = event(attempts) else { return }
            try await enqueue(event, job: job, connection)
        }
    }

    /// A recording's uploads as GET shows them (nil: none queued).
    func uploads(of job: String) async throws -> JobStatus.Uploads? {
        let rows = try await client.query("""
            SELECT count(*) FILTER (WHERE state = 'pending'), count(*) FILTER (WHERE state = 'uploaded'), count(*) FILTER (WHERE state = 'missing'),
                coalesce(sum(attempts), 0), (SELECT last_error FROM job_uploads WHERE job_id = \(job) AND state = 'pending' AND last_error IS NOT NULL
                                             ORDER BY updated DESC LIMIT 1), count(*),
                (SELECT string_agg(DISTINCT o.owner, ',') FROM job_owners o WHERE o.job_id = \(job) AND o.folder_id IS NOT NULL
                    AND NOT EXISTS (SELECT 1 FROM job_folders f WHERE f.job_id = o.job_id AND f.folder_id = o.folder_id)),
                (SELECT uploads_finished IS NOT NULL FROM jobs WHERE id = \(job))
            FROM job_uploads WHERE job_id = \(job)
            """, logger: log).collect()
        guard let row = rows.first else { return nil }
        let (pending, uploaded, missing, tries, lastError, all, waiting, finished) = try row.decode((Int, Int, Int, Int, String?, Int, String?, Bool?).self)
        guard all > 0 else { return nil }
        let abandoned = try await client.withConnection { try await self.abandoned(job, $0) }
        return JobStatus.Uploads(pending: pending, uploaded: uploaded, missing: missing, failedTries: tries, lastError: lastError,
                                 waitingFor: waiting.map { $0.split(separator: ",").map(String.init) },
                                 abandoned: abandoned.isEmpty ? nil : abandoned, finished: finished ?? false)
    }

    /// Takes the pending files of uploaders whose session has been gone for `grace` (their
    /// process died, or lost the database: their own queue may still hold them, and drops
    /// them once it sees they are no longer its own), of the folders `reachable` says this
    /// instance sees too (its marker there has the same id: shared storage). A dead owner's
    /// own disk is not: its files wait for it, never read from the same path on this disk.
    func takeUploads(session: Int64, grace: Duration, reachable: @Sendable (_ folder: String, _ folderID: String) async -> Bool) async throws
        -> [(row: UploadRow, from: String)] {
        let graceSeconds = Self.seconds(grace)
        return try await client.withTransaction(logger: log) { connection -> [(row: UploadRow, from: String)] in
            let rows = try await connection.query("""
                SELECT u.job_id, u.key, u.name, u.file, u.content, u.folder_id, f.folder, u.uploader FROM job_uploads u
                    LEFT JOIN job_folders f ON f.job_id = u.job_id AND f.folder_id = u.folder_id
                WHERE u.state = 'pending'
                    AND u.uploader_session IN (SELECT key FROM instance_sessions WHERE gone_since < now() - make_interval(secs => \(graceSeconds)))
                FOR UPDATE OF u SKIP LOCKED
                """, logger: log)
            var candidates: [(row: UploadRow, folder: String?, from: String)] = []
            for try await (job, key, name, file, content, folderID, folder, from) in rows.decode((String, String, String, String, String?, String?, String?, String).self) {
                candidates.append((UploadRow(job: job, key: key, name: name, file: file, content: content, folderID: folderID), folder, from))
            }
            var seen: [String: Bool] = [:], taken: [(row: UploadRow, from: String)] = []
            for c in candidates {
                if let folderID = c.row.folderID {
                    guard let folder = c.folder else { continue }
                    let ok: Bool
                    if let known = seen[folder + "\u{0}" + folderID] { ok = known } else {
                        ok = await reachable(folder, folderID)
                        seen[folder + "\u{0}" + folderID] = ok
                    }
                    guard ok else { continue }
                }
                try await connection.query("""
                    UPDATE job_uploads SET uploader = \(instance), uploader_session = \(session), updated = now() WHERE job_id = \(c.row.job) AND key = \(c.row.key)
                    """, logger: log)
                taken.append((c.row, c.from))
            }
            return taken
        }
    }
}
