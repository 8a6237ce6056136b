import Foundation
import ObjectStore
import PostgresNIO

/// A recording's uploads as the cluster knows them: a task of kind `upload` per file
/// (migration step 12), pinned to the instance whose disk holds it, and `job_folders` (step 5)
/// for its folders. Every instance answers GET's `uploads` from here; only the instance a task
/// is pinned to claims it, and the tasks pinned to one whose session is gone are re-pinned to
/// another that holds the same folder (shared storage); each folder is queued once, by an
/// instance that holds it.
extension ClusterStore {
    /// One file of a recording, as queued.
    struct UploadRow: Sendable {
        var job: String
        var key: String
        /// Its name in the recording (`part-N/` before it for an earlier owner's own disk).
        var name: String
        /// Where the uploader reads it.
        var file: String
        /// A file only the queuer's state directory holds (the merged manifest), inline: any
        /// instance uploads it.
        var content: String?
        /// The folder it is in (its marker's id); nil for the merged manifest.
        var folderID: String?
        var size: Int?
        var sha256: String?

        /// As a task, pinned to `instance` unless inline.
        func task(pinnedTo instance: String) -> NewTask {
            var args = ["name": name, "file": file]
            args["folder"] = folderID
            args["size"] = size.map(String.init)
            args["sha256"] = sha256
            return NewTask(kind: .upload, key: key, job: job, pinnedTo: content == nil ? instance : nil, args: args, payload: content)
        }
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

    /// Queues a folder's files as this instance's tasks, unless another instance queued the
    /// same folder (shared storage): answers whether this one did.
    func queueFolder(job: String, folderID: String, folder: String, prefix: String, manifest: String?, rows: [UploadRow]) async throws -> Bool {
        try await client.withTransaction(logger: log) { connection -> Bool in
            let won = try await connection.query("""
                INSERT INTO job_folders (job_id, folder_id, queued_by, folder, manifest, prefix)
                VALUES (\(job), \(folderID), \(instance), \(folder), \(manifest), \(prefix))
                ON CONFLICT (job_id, folder_id) DO NOTHING RETURNING 1
                """, logger: log).collect()
            guard !won.isEmpty else { return false }
            for row in rows { try await enqueue(row.task(pinnedTo: instance), connection) }
            return true
        }
    }

    /// The merged manifest's task; answers whether it was queued now (not by another before).
    func queueMerged(_ row: UploadRow) async throws -> Bool {
        try await enqueue(row.task(pinnedTo: instance))
    }

    /// A recording's uploads as GET shows them (nil: none queued). A task's `attempts` counts
    /// its successful try too: the failed ones are the others.
    func uploads(of job: String) async throws -> JobStatus.Uploads? {
        let rows = try await client.query("""
            SELECT count(*) FILTER (WHERE state IN ('available', 'running')), count(*) FILTER (WHERE state = 'completed'),
                count(*) FILTER (WHERE state = 'discarded'), coalesce(sum(attempts), 0) - count(*) FILTER (WHERE state = 'completed'),
                (SELECT last_error FROM tasks WHERE kind = 'upload' AND job_id = \(job) AND state IN ('available', 'running')
                    AND last_error IS NOT NULL ORDER BY run_at DESC LIMIT 1), count(*),
                (SELECT string_agg(DISTINCT o.owner, ',') FROM job_owners o WHERE o.job_id = \(job) AND o.folder_id IS NOT NULL
                    AND NOT EXISTS (SELECT 1 FROM job_folders f WHERE f.job_id = o.job_id AND f.folder_id = o.folder_id)),
                (SELECT uploads_finished IS NOT NULL FROM jobs WHERE id = \(job))
            FROM tasks WHERE kind = 'upload' AND job_id = \(job)
            """, logger: log).collect()
        guard let row = rows.first else { return nil }
        let (pending, uploaded, missing, tries, lastError, all, waiting, finished) = try row.decode((Int, Int, Int, Int, String?, Int, String?, Bool?).self)
        guard all > 0 else { return nil }
        let abandoned = try await client.withConnection { try await self.abandoned(job, $0) }
        return JobStatus.Uploads(pending: pending, uploaded: uploaded, missing: missing, failedTries: tries, lastError: lastError,
                                 waitingFor: waiting.map { $0.split(separator: ",").map(String.init) },
                                 abandoned: abandoned.isEmpty ? nil : abandoned, finished: finished ?? false)
    }

    /// SQL: the instance `column` names has no database session, and its last one has been
    /// gone for `grace` (its process died, or lost the database).
    static func gone(_ column: String, for grace: Duration) -> String {
        """
        (EXISTS (SELECT 1 FROM instance_sessions s WHERE s.instance = \(column))
         AND NOT EXISTS (SELECT 1 FROM instance_sessions s WHERE s.instance = \(column)
                         AND (s.gone_since IS NULL OR s.gone_since >= now() - make_interval(secs => \(seconds(grace))))))
        """
    }

    /// Re-pins to this instance the waiting uploads of instances gone for `grace`, of the
    /// folders `reachable` says this instance sees too (its marker there has the same id:
    /// shared storage). A dead owner's own disk is not: its files wait for it (or an operator's
    /// abandon), never read from the same path on this disk. A task taken is due at once (another
    /// disk path, another network). Answers each task taken, and from whom.
    func takeUploads(grace: Duration, reachable: @Sendable (_ folder: String, _ folderID: String) async -> Bool) async throws
        -> [(job: String, from: String)] {
        try await client.withTransaction(logger: log) { connection -> [(job: String, from: String)] in
            let rows = try await connection.query(PostgresQuery(unsafeSQL: """
                SELECT t.id, t.job_id, t.args->>'folder', f.folder, t.pinned_to FROM tasks t
                    LEFT JOIN job_folders f ON f.job_id = t.job_id AND f.folder_id = t.args->>'folder'
                WHERE t.kind = 'upload' AND t.state = 'available' AND t.pinned_to IS NOT NULL AND t.pinned_to <> $1
                    AND \(Self.gone("t.pinned_to", for: grace))
                FOR UPDATE OF t SKIP LOCKED
                """, binds: { var b = PostgresBindings(); b.append(instance); return b }()), logger: log)
            var candidates: [(id: Int64, job: String, folderID: String?, folder: String?, from: String)] = []
            for try await c in rows.decode((Int64, String, String?, String?, String).self) { candidates.append(c) }
            var seen: [String: Bool] = [:], taken: [(job: String, from: String)] = []
            for c in candidates {
                guard let folderID = c.folderID, let folder = c.folder else { continue }
                let ok: Bool
                if let known = seen[folder + "\u{0}" + folderID] { ok = known } else {
                    ok = await reachable(folder, folderID)
                    seen[folder + "\u{0}" + folderID] = ok
                }
                guard ok else { continue }
                try await connection.query("UPDATE tasks SET pinned_to = \(instance), run_at = now() WHERE id = \(c.id) AND state = 'available'", logger: log)
                taken.append((c.job, c.from))
            }
            return taken
        }
    }
}
