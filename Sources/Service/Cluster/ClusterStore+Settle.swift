import Foundation
import ObjectStore
import PostgresNIO
import Webhooks

/// The end of a recording's uploads: once the job has ended, every folder of it is queued and
/// no file is pending, a `merged` task is queued and one instance writes the merged manifest;
/// once that is uploaded too, `job.finished` is queued. Each step is decided under the job
/// row's lock.
extension ClusterStore {
    /// What the merged manifest is made of: each folder's manifest (with the prefix of its
    /// files' names), the owners, every file queued.
    struct MergeInput: Sendable {
        var folders: [(prefix: String, manifest: String?)]
        var owners: [JobStatus.Owner]
        var files: [(name: String, key: String, size: Int, sha256: String)]
        var abandoned: [AbandonedFolder] = []
    }

    /// What `job.finished` names, for the one instance that settled a recording's last file.
    struct FinishedUploads: Sendable {
        var kind: String
        var room: Int64
        var failedJob: Bool
        /// Every file by name, with its object; nil: missing.
        var files: [(name: String, object: UploadedObject?)]
        var abandoned: [AbandonedFolder] = []
    }

    enum NextStep: Sendable {
        case wait
        case merge(MergeInput)
        case finished(FinishedUploads)
    }

    /// An upload task of this instance's claim verified in the store (`object`, kept in its
    /// `args` before its local file is deleted: a try after a crash finds it and only deletes);
    /// false: no longer this instance's.
    func noteUploaded(_ task: QueuedTask, _ object: UploadedObject) async throws -> Bool {
        let json = String(decoding: try Self.encoder.encode(object), as: UTF8.self)
        return !(try await client.query("""
            UPDATE tasks SET args = args || jsonb_build_object('object', \(json)::text, 'by', \(instance)::text)
            WHERE id = \(task.id) AND state = 'running' AND claimed_by = \(instance) RETURNING 1
            """, logger: log).collect().isEmpty)
    }

    /// An upload task of this instance's claim ended: `completed` (`object` nil: `discarded`,
    /// its file gone, `why`), and in the same transaction the recording's next step (nil: the
    /// task was no longer this instance's, nothing written).
    func settleUpload(_ task: QueuedTask, uploaded: Bool, why: String? = nil, mergedKey: String) async throws -> NextStep? {
        guard let job = task.job else { return nil }
        return try await client.withTransaction(logger: log) { connection -> NextStep? in
            let locked = try await lock(job, connection)
            let rows = try await connection.query("""
                UPDATE tasks SET state = \(uploaded ? "completed" : "discarded")::task_state, finished = now(), attempts = attempts + 1,
                    last_error = \(why), claimed_by = NULL, claimed_session = NULL, claim_until = NULL
                WHERE id = \(task.id) AND state = 'running' AND claimed_by = \(instance) RETURNING 1
                """, logger: log).collect()
            guard !rows.isEmpty else { return nil }
            guard locked else { return .wait }
            return try await next(job, mergedKey: mergedKey, connection)
        }
    }

    /// Ended recordings whose uploads have not finished and have nothing pending (a folder
    /// queued with no file, an abandoned one): their next step is looked at again.
    func stalledUploads() async throws -> [String] {
        let rows = try await client.query("""
            SELECT id FROM jobs j WHERE state = 'uploading'
                AND EXISTS (SELECT 1 FROM job_folders f WHERE f.job_id = j.id)
                AND NOT EXISTS (SELECT 1 FROM tasks t WHERE t.kind = 'upload' AND t.job_id = j.id AND t.state IN ('available', 'running'))
            """, logger: log).collect()
        return try rows.map { try $0.decode(String.self) }
    }

    func nextStep(job: String, mergedKey: String) async throws -> NextStep {
        try await client.withTransaction(logger: log) { connection -> NextStep in
            guard try await lock(job, connection) else { return .wait }
            return try await next(job, mergedKey: mergedKey, connection)
        }
    }

    func abandoned(_ job: String, _ connection: PostgresConnection) async throws -> [AbandonedFolder] {
        try await connection.query("""
            SELECT f.prefix, f.abandoned, coalesce((SELECT string_agg(DISTINCT o.owner, ',' ORDER BY o.owner) FROM job_owners o
                                                    WHERE o.job_id = f.job_id AND o.folder_id = f.folder_id), '')
            FROM job_folders f WHERE f.job_id = \(job) AND f.abandoned IS NOT NULL ORDER BY f.prefix
            """, logger: log).collect().map { row in
            let (prefix, reason, owners) = try row.decode((String, String, String).self)
            return AbandonedFolder(owners: owners.split(separator: ",").map(String.init), prefix: prefix, reason: reason)
        }
    }

    private func lock(_ job: String, _ connection: PostgresConnection) async throws -> Bool {
        !(try await connection.query("SELECT 1 FROM jobs WHERE id = \(job) FOR UPDATE", logger: log).collect().isEmpty)
    }

    private func next(_ job: String, mergedKey: String, _ connection: PostgresConnection) async throws -> NextStep {
        let rows = try await connection.query("""
            SELECT state = 'uploading',
                EXISTS (SELECT 1 FROM tasks WHERE kind = 'upload' AND job_id = \(job) AND state IN ('available', 'running')),
                EXISTS (SELECT 1 FROM job_owners o WHERE o.job_id = \(job) AND o.folder_id IS NOT NULL
                        AND NOT EXISTS (SELECT 1 FROM job_folders f WHERE f.job_id = o.job_id AND f.folder_id = o.folder_id)),
                EXISTS (SELECT 1 FROM tasks WHERE kind = 'upload' AND key = \(mergedKey)),
                kind, (spec->>'room')::bigint, final_state = 'failed'
            FROM jobs WHERE id = \(job)
            """, logger: log).collect()
        guard let row = rows.first else { return .wait }
        let (open, pending, folderWaits, merged, kind, room, failed) = try row.decode((Bool, Bool, Bool, Bool, String, Int64, Bool).self)
        guard open, !pending, !folderWaits else { return .wait }
        guard merged else {
            // A task, queued with the settle that made it due: whichever instance works it
            // builds the manifest (`.merge` answered to it), even if this one dies now.
            try await enqueue(NewTask(kind: .merged, key: job, job: job), connection)
            var input = MergeInput(folders: [], owners: [], files: [])
            for try await (prefix, manifest) in try await connection.query("""
                SELECT prefix, manifest FROM job_folders WHERE job_id = \(job) AND abandoned IS NULL ORDER BY prefix
                """, logger: log).decode((String, String?).self) { input.folders.append((prefix, manifest)) }
            input.abandoned = try await abandoned(job, connection)
            for try await (owner, cause, started, ended, endCause) in try await connection.query("""
                SELECT owner, cause, started, ended, end_cause FROM job_owners WHERE job_id = \(job) ORDER BY seq
                """, logger: log).decode((String, String, Date, Date?, String?).self) {
                input.owners.append(.init(instance: owner, cause: cause, since: started, until: ended, endCause: endCause))
            }
            for try await (name, key, size, sha) in try await connection.query("""
                SELECT args->>'name', key, coalesce((args->>'size')::bigint, 0), coalesce(args->>'sha256', '') FROM tasks
                WHERE kind = 'upload' AND job_id = \(job) AND state = 'completed' ORDER BY args->>'name'
                """, logger: log).decode((String, String, Int, String).self) { input.files.append((name, key, size, sha)) }
            return .merge(input)
        }
        guard let (row, now) = try await locked(job, connection),
              case .apply(let step) = lifecycle(grace: .zero).decide(.uploadsFinished, row, at: now),
              try await apply(step, to: job, connection) else { return .wait }
        var finished = FinishedUploads(kind: kind, room: room, failedJob: failed, files: [], abandoned: try await abandoned(job, connection))
        for try await (name, object) in try await connection.query("""
            SELECT args->>'name', args->>'object' FROM tasks WHERE kind = 'upload' AND job_id = \(job) ORDER BY args->>'name'
            """, logger: log).decode((String, String?).self) {
            finished.files.append((name, object.flatMap { try? Self.decoder.decode(UploadedObject.self, from: Data($0.utf8)) }))
        }
        // Queued with `uploads_finished`: the one instance that set it sends it, even if it dies now.
        if !finished.failedJob {
            try await enqueue(try WebhookEvent(.jobFinished, data: JobEvent(job: job, finished), id: "\(job).finished"), job: job, connection)
        }
        return .finished(finished)
    }
}
