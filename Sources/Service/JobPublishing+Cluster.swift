import Bot
import CoreMetrics
import Foundation
import Locking
import Logging
import ObjectStore
import Spool
import Webhooks

/// Uploads with `--database`: the tables `job_uploads` and `job_folders` (ClusterStore+Uploads)
/// replace the state directory's batches. Every instance shows a recording's uploads; a file is
/// uploaded by the instance the table names, and the files of one whose session is gone are
/// taken by another (it reads them where the first did: a folder is on shared storage, or else
/// only its own instance queues it); once every folder is uploaded one instance writes the
/// merged manifest, and the one that settles it sends `job.finished`.
extension JobPublishing {
    /// From now on, uploads are kept in `store` (set once the database is open).
    func use(_ store: ClusterStore) { cluster.update { $0 = store } }

    var clusterStore: ClusterStore? { cluster.value }

    static func mergedKey(_ job: String, _ location: S3Location) -> String { location.key("\(job)/recording.json") }

    /// Once a second on every instance: folders of ended recordings queued, a dead uploader's
    /// files taken over, a recording whose uploads stalled between two steps moved on.
    func sweep(session: Int64, grace: Duration) async {
        self.session.update { $0 = session }
        guard let store = clusterStore, uploads != nil, let location else { return }
        await queueEndedFolders(store, session: session)
        await takeUploads(store, session: session, grace: grace)
        do {
            // Their next step queued (a `merged` task), if due.
            for job in try await store.stalledUploads() { _ = try await store.nextStep(job: job, mergedKey: Self.mergedKey(job, location)) }
        } catch {
            logger.warning("cluster: cannot look at recordings whose uploads wait: \(error)")
        }
    }

    /// Pending files of uploaders whose database session is gone, taken by this instance.
    func takeUploads(_ store: ClusterStore, session: Int64, grace: Duration) async {
        guard let uploads else { return }
        let taken: [(row: ClusterStore.UploadRow, from: String)]
        let files = self.files
        let reachable: @Sendable (String, String) async -> Bool = { folder, folderID in
            await OffPool.run(on: files) { FolderMarker.existing(in: folder) == folderID }
        }
        do { taken = try await store.takeUploads(session: session, grace: grace, reachable: reachable) } catch {
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
        await OffPool.run(on: files) {
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
        }
    }

    // MARK: - Steps after a file settled

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

    /// A recording's next step looked at now (after an operator gave up a folder), not at the next sweep.
    func advanceNow(_ job: String) async {
        guard let store = clusterStore, let location else { return }
        do { _ = try await store.nextStep(job: job, mergedKey: Self.mergedKey(job, location)) } catch {
            logger.warning("job \(job): its uploads' next step is left to the next sweep: \(error)")
        }
    }

    /// A `merged` task: the recording's merged manifest built and queued if it is still due.
    func mergeTask(_ job: String) async -> RetryOutcome {
        guard let store = clusterStore, let location else { return .retry("no database or storage here") }
        do {
            guard case .merge(let input) = try await store.nextStep(job: job, mergedKey: Self.mergedKey(job, location)) else { return .done }
            return await merge(job, input)
        } catch {
            return .retry("the job database cannot be read: \(error)")
        }
    }

    /// The merged manifest (`recording.json`) from every folder's manifest, written to the
    /// state directory and queued inline: whoever uploads it may be another instance.
    private func merge(_ job: String, _ input: ClusterStore.MergeInput) async -> RetryOutcome {
        guard let store = clusterStore, let uploads, let location else { return .retry("no database or storage here") }
        let decoder = RecordingManifest.decoder
        let folders = input.folders.compactMap { f in
            f.manifest.flatMap { try? decoder.decode(RecordingManifest.self, from: Data($0.utf8)) }.map { (prefix: f.prefix, manifest: $0) }
        }
        if folders.count < input.folders.count {
            logger.error("job \(job): \(input.folders.count - folders.count) folder(s) had no readable manifest; the merged one lists the others")
        }
        let listed = input.files.map { MergedManifest.File(name: $0.name, key: $0.key, size: $0.size, sha256: $0.sha256) }
        let path = mergedDirectory.appendingPathComponent("\(job).recording.json")
        let manifest = MergedManifest(job: job, folders: folders, owners: input.owners, files: listed, abandoned: input.abandoned)
        let text: String
        do {
            text = try await OffPool.run(on: files) {
                try manifest.write(to: path)
                return try String(contentsOf: path, encoding: .utf8)
            }
        } catch {
            logger.error("job \(job): the merged manifest cannot be written (\(error)); tried again")
            return .retry("the merged manifest cannot be written: \(error)")
        }
        let row = ClusterStore.UploadRow(job: job, key: Self.mergedKey(job, location), name: "recording.json", file: path.path, content: text)
        do {
            guard try await store.queueMerged(row, session: session.value) else { return .done }
        } catch {
            logger.error("job \(job): the merged manifest cannot be queued (\(error)); tried again")
            return .retry("the merged manifest cannot be queued: \(error)")
        }
        logger.info("job \(job): merged manifest of \(folders.count) folder(s) and \(input.owners.count) owner(s) queued")
        await Self.enqueue([row], uploads: uploads, on: files, log: logger)
        return .done
    }
}
