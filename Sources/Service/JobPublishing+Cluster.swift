import CoreMetrics
import Foundation
import Logging
import ObjectStore
import Spool
import Webhooks

/// Uploads with `--database`: the table `job_uploads` (ClusterStore+Uploads) replaces the
/// state directory's batches. Every instance shows a recording's uploads; a file is uploaded by
/// the instance the table names, and the files of one whose session is gone are taken by
/// another (it reads them where the first did: the roots are shared); the instance that
/// settles the last file sends `job.finished`.
extension JobPublishing {
    /// From now on, uploads are kept in `store` (set once the database is open).
    func use(_ store: ClusterStore) { cluster.update { $0 = store } }

    var clusterStore: ClusterStore? { cluster.value }

    /// Queues a recording's files as this instance's: their rows first (retried while the
    /// database is away: the files wait in the folder meanwhile), then the local queue.
    func queueClustered(_ rows: [ClusterStore.UploadRow], failedJob: Bool, session: Int64?, store: ClusterStore, uploads: UploadQueue) {
        let (log, files) = (logger, self.files)
        Task {
            for attempt in 1... {
                do {
                    try await store.queueUploads(rows, failedJob: failedJob, session: session)
                    break
                } catch {
                    if attempt == 1 { log.error("job \(rows.first?.job ?? "?"): its uploads cannot be written to the database (\(error)); trying again every 5 s") }
                    try? await Task.sleep(for: .seconds(5))
                    if Task.isCancelled { return }
                }
            }
            await Self.enqueue(rows, uploads: uploads, on: files, log: log)
        }
    }

    /// Pending files of uploaders whose database session is gone, taken by this instance.
    func takeUploads(session: Int64, grace: Duration) async {
        guard let store = clusterStore, let uploads else { return }
        let taken: [(row: ClusterStore.UploadRow, from: String)]
        do { taken = try await store.takeUploads(session: session, grace: grace) } catch {
            logger.warning("cluster: cannot look for uploads left by others: \(error)")
            return
        }
        guard !taken.isEmpty else { return }
        Counter(label: "sfubot_upload_takeovers_total").increment(by: taken.count)
        for (job, files) in Dictionary(grouping: taken, by: \.row.job).sorted(by: { $0.key < $1.key }) {
            let from = Set(files.map(\.from)).sorted().joined(separator: ", ")
            logger.warning("job \(job): \(files.count) pending upload(s) taken over from \(from), whose database session ended")
        }
        // An inline file (the merged manifest) is written here first: the other's copy is out of reach.
        let merged = mergedDirectory
        let rows = taken.map { t in
            var row = t.row
            if row.content != nil { row.file = merged.appendingPathComponent("\(row.job).recording.json").path }
            return row
        }
        await Self.enqueue(rows, uploads: uploads, on: files, log: logger)
    }

    /// Into the local queue, off the pool (each entry is a synced file).
    static func enqueue(_ rows: [ClusterStore.UploadRow], uploads: UploadQueue, on files: DispatchQueue, log: Logger) async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            files.async {
                for row in rows {
                    do {
                        if let content = row.content {
                            let path = URL(fileURLWithPath: row.file)
                            try FileManager.default.createDirectory(at: path.deletingLastPathComponent(), withIntermediateDirectories: true,
                                                                    attributes: [.posixPermissions: 0o700])
                            try Data(content.utf8).write(to: path, options: .atomic)
                        }
                        try uploads.enqueue(file: row.file, key: row.key, context: ["job": row.job])
                    } catch {
                        log.error("job \(row.job): cannot queue \(row.file) for upload: \(error); it stays where it is")
                    }
                }
                done.resume()
            }
        }
    }

    // MARK: - Upload results (UploadQueue's hooks)

    static func clusterCheck(_ entry: UploadEntry, _ store: ClusterStore) async -> UploadCheck {
        guard let job = entry.context["job"] else { return .upload }
        do {
            switch try await store.uploadTurn(job: job, key: entry.key) {
            case .mine: return .upload
            case .notMine(let why): return .drop(why)
            }
        } catch {
            return .wait("the job database cannot be reached to check who uploads it: \(error)")
        }
    }

    static func clusterSettled(_ entry: UploadEntry, _ object: UploadedObject?, _ store: ClusterStore, webhooks: WebhookOutbox?, logger: Logger) async {
        guard let job = entry.context["job"] else { return }
        let finished: ClusterStore.FinishedUploads?
        do { finished = try await store.settleUpload(job: job, key: entry.key, object: object) } catch {
            // The local entry is done; the row stays pending until its uploader's session ends
            // and another instance uploads it again (same bytes, same key).
            logger.error("job \(job): \(entry.key) is \(object == nil ? "missing" : "uploaded") but the database cannot be told: \(error)")
            return
        }
        guard let finished, !finished.failedJob, let webhooks else { return }
        let files = finished.files.compactMap { f in f.object.map { FileEvent(name: f.name, object: $0) } }
        let missing = finished.files.filter { $0.object == nil }.map(\.name)
        do {
            try webhooks.send(WebhookEvent(.jobFinished, data: JobEvent(job: job, kind: finished.kind, room: finished.room, files: files,
                                                                        missing: missing.isEmpty ? nil : missing), id: "\(job).finished"))
        } catch {
            logger.error("webhook job.finished: \(error)")
        }
    }
}
