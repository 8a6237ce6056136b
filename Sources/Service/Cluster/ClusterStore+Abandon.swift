import Foundation
import PostgresNIO

/// An operator's way out when an owner's own disk is gone for good. Until then a recording
/// waits for it (its merged manifest and `job.finished` promise the whole recording); given
/// up, the owner's folders are marked `abandoned` with why, its pending files `missing`, and
/// the recording finishes with what the other folders hold, saying what was lost. Never done
/// by itself: a disk that may come back is waited for.
extension ClusterStore {
    enum Abandoned: Sendable, Equatable {
        /// Folders never queued, and files pending in queued ones, given up.
        case done(folders: Int, files: Int)
        case notFound
        /// Refused, and why (the API's 409).
        case refused(String)
    }

    /// `grace`: the takeover grace. A waiting file is given up only once the instance it is
    /// pinned to has had no session for that long, in a folder no other owner wrote: one another instance can read
    /// (shared storage) has been taken over by then, and is never marked missing.
    func abandon(job: String, owner: String, reason: String, grace: Duration) async throws -> Abandoned {
        try await client.withTransaction(logger: log) { connection -> Abandoned in
            let state = try await connection.query("""
                SELECT state IN ('uploading', 'done', 'failed'), state <> 'uploading' FROM jobs WHERE id = \(job) FOR UPDATE
                """, logger: log).collect()
            guard let row = state.first else { return .notFound }
            let (ended, finished) = try row.decode((Bool, Bool).self)
            guard ended else { return .refused("the recording still runs: its folders are queued once it has ended") }
            guard !finished else { return .refused("its uploads have finished: nothing waits") }
            let live = try await connection.query("""
                SELECT 1 FROM instance_sessions WHERE instance = \(owner) AND gone_since IS NULL
                """, logger: log).collect()
            guard live.isEmpty else { return .refused("instance \(owner) is running: it queues and uploads its own folder") }

            let why = "abandoned by \(instance): \(reason)"
            let waiting = try await connection.query("""
                SELECT o.folder_id, min(o.seq),
                    o.folder_id = (SELECT folder_id FROM job_owners WHERE job_id = \(job) ORDER BY seq DESC LIMIT 1)
                FROM job_owners o WHERE o.job_id = \(job) AND o.owner = \(owner) AND o.folder_id IS NOT NULL
                    AND NOT EXISTS (SELECT 1 FROM job_folders f WHERE f.job_id = o.job_id AND f.folder_id = o.folder_id)
                GROUP BY o.folder_id
                """, logger: log).collect()
            for folder in waiting {
                let (folderID, first, last) = try folder.decode((String, Int, Bool).self)
                // Under the prefix its files would have had: the merged manifest names it.
                try await connection.query("""
                    INSERT INTO job_folders (job_id, folder_id, queued_by, folder, manifest, prefix, abandoned)
                    VALUES (\(job), \(folderID), \(instance), '', NULL, \(last ? "" : "part-\(first)/"), \(why))
                    """, logger: log)
            }
            // Files of its own folders still waiting, pinned to an instance gone for the grace.
            var binds = PostgresBindings()
            binds.append(why)
            binds.append(job)
            binds.append(owner)
            let given = try await connection.query(PostgresQuery(unsafeSQL: """
                UPDATE tasks t SET state = 'discarded', finished = now(), last_error = $1, claimed_by = NULL, claimed_session = NULL, claim_until = NULL
                WHERE t.kind = 'upload' AND t.job_id = $2 AND t.state IN ('available', 'running')
                    AND t.args->>'folder' IN (SELECT folder_id FROM job_owners WHERE job_id = $2 AND owner = $3)
                    AND NOT EXISTS (SELECT 1 FROM job_owners o WHERE o.job_id = $2 AND o.folder_id = t.args->>'folder' AND o.owner <> $3)
                    AND \(Self.gone("t.pinned_to", for: grace))
                RETURNING t.args->>'folder'
                """, binds: binds), logger: log).collect()
            let folders = Set(try given.map { try $0.decode(String.self) })
            for folderID in folders {
                try await connection.query("""
                    UPDATE job_folders SET abandoned = \(why) WHERE job_id = \(job) AND folder_id = \(folderID) AND abandoned IS NULL
                    """, logger: log)
            }
            guard !waiting.isEmpty || !given.isEmpty else {
                return .refused("nothing of \(owner)'s waits: no folder of it unqueued, no file of it pending")
            }
            return .done(folders: waiting.count, files: given.count)
        }
    }
}
