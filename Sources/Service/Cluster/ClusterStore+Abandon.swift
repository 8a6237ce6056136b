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

    /// `grace`: the takeover grace. A pending file is given up only once its uploader's session
    /// has been gone that long, in a folder no other owner wrote: one another instance can read
    /// (shared storage) has been taken over by then, and is never marked missing.
    func abandon(job: String, owner: String, reason: String, grace: Duration) async throws -> Abandoned {
        let graceSeconds = Self.seconds(grace)
        return try await client.withTransaction(logger: log) { connection -> Abandoned in
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
            // Files of its own folders still pending, left by a session gone for the grace.
            let given = try await connection.query("""
                UPDATE job_uploads u SET state = 'missing', last_error = \(why), updated = now()
                WHERE u.job_id = \(job) AND u.state = 'pending'
                    AND u.folder_id IN (SELECT folder_id FROM job_owners WHERE job_id = \(job) AND owner = \(owner))
                    AND NOT EXISTS (SELECT 1 FROM job_owners o WHERE o.job_id = \(job) AND o.folder_id = u.folder_id AND o.owner <> \(owner))
                    AND u.uploader_session IN (SELECT key FROM instance_sessions WHERE gone_since < now() - make_interval(secs => \(graceSeconds)))
                RETURNING u.folder_id
                """, logger: log).collect()
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
