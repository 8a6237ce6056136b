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

    /// A file of this instance's verified in the store (`object`), or given up (nil: its file
    /// is gone); then the recording's next step.
    func settleUpload(job: String, key: String, object: UploadedObject?, mergedKey: String) async throws -> NextStep {
        let json = try object.map { String(decoding: try Self.encoder.encode($0), as: UTF8.self) }
        return try await client.withTransaction(logger: log) { connection -> NextStep in
            guard try await lock(job, connection) else { return .wait }
            try await connection.query("""
                UPDATE job_uploads SET state = \(object == nil ? "missing" : "uploaded"), object = \(json)::jsonb, updated = now()
                WHERE job_id = \(job) AND key = \(key) AND uploader = \(instance) AND state = 'pending'
                """, logger: log)
            return try await next(job, mergedKey: mergedKey, connection)
        }
    }

    /// Ended recordings whose uploads have not finished and have nothing pending (a folder
    /// queued with no file, an abandoned one): their next step is looked at again.
    func stalledUploads() async throws -> [String] {
        let rows = try await client.query("""
            SELECT id FROM jobs j WHERE state = 'uploading'
                AND EXISTS (SELECT 1 FROM job_folders f WHERE f.job_id = j.id)
                AND NOT EXISTS (SELECT 1 FROM job_uploads u WHERE u.job_id = j.id AND u.state = 'pending')
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
                EXISTS (SELECT 1 FROM job_uploads WHERE job_id = \(job) AND state = 'pending'),
                EXISTS (SELECT 1 FROM job_owners o WHERE o.job_id = \(job) AND o.folder_id IS NOT NULL
                        AND NOT EXISTS (SELECT 1 FROM job_folders f WHERE f.job_id = o.job_id AND f.folder_id = o.folder_id)),
                EXISTS (SELECT 1 FROM job_uploads WHERE job_id = \(job) AND key = \(mergedKey)),
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
                SELECT name, key, coalesce(size, 0), coalesce(sha256, '') FROM job_uploads WHERE job_id = \(job) AND state = 'uploaded' ORDER BY name
                """, logger: log).decode((String, String, Int, String).self) { input.files.append((name, key, size, sha)) }
            return .merge(input)
        }
        guard let (row, now) = try await locked(job, connection),
              case .apply(let step) = lifecycle(grace: .zero).decide(.uploadsFinished, row, at: now),
              try await apply(step, to: job, connection) else { return .wait }
        var finished = FinishedUploads(kind: kind, room: room, failedJob: failed, files: [], abandoned: try await abandoned(job, connection))
        for try await (name, object) in try await connection.query("""
            SELECT name, object::text FROM job_uploads WHERE job_id = \(job) ORDER BY name
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
