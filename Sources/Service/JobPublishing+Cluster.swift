import Bot
import CoreMetrics
import Foundation
import Locking
import Logging
import ObjectStore
import Spool
import Webhooks

/// Uploads with `--database`: the cluster's `upload` tasks and `job_folders` (ClusterStore+Uploads)
/// instead of the state folder's tasks. Every instance shows a recording's uploads; a file is
/// uploaded by the instance its task is pinned to, and the tasks of one whose session is gone
/// are re-pinned to another (it reads them where the first did: a folder is on shared storage,
/// or else only its own instance queues it); once every folder is uploaded one instance writes
/// the merged manifest, and the one that settles it sends `job.finished`.
extension JobPublishing {
    /// From now on, uploads are kept in `store` (set once the database is open).
    func use(_ store: ClusterStore) { cluster.update { $0 = store } }

    var clusterStore: ClusterStore? { cluster.value }

    static func mergedKey(_ job: String, _ location: S3Location) -> String { location.key("\(job)/recording.json") }

    /// Once a second on every instance: folders of ended recordings queued, a dead uploader's
    /// files taken over, a recording whose uploads stalled between two steps moved on.
    func sweep(session: Int64, grace: Duration) async {
        self.session.update { $0 = session }
        guard let store = clusterStore, storage != nil, let location else { return }
        await queueEndedFolders(store)
        await takeUploads(store, grace: grace)
        do {
            // Their next step queued (a `merged` task), if due.
            for job in try await store.stalledUploads() { _ = try await store.nextStep(job: job, mergedKey: Self.mergedKey(job, location)) }
        } catch {
            logger.warning("cluster: cannot look at recordings whose uploads wait: \(error)")
        }
    }

    /// Waiting uploads of instances whose database session is gone, re-pinned to this one.
    func takeUploads(_ store: ClusterStore, grace: Duration) async {
        let files = self.files
        let reachable: @Sendable (String, String) async -> Bool = { folder, folderID in
            await OffPool.run(on: files) { FolderMarker.existing(in: folder) == folderID }
        }
        let taken: [(job: String, from: String)]
        do { taken = try await store.takeUploads(grace: grace, reachable: reachable) } catch {
            logger.warning("cluster: cannot look for uploads left by others: \(error)")
            return
        }
        guard !taken.isEmpty else { return }
        Counter(label: "sfubot_upload_takeovers_total").increment(by: taken.count)
        for (job, files) in Dictionary(grouping: taken, by: \.job).sorted(by: { $0.key < $1.key }) {
            let from = Set(files.map(\.from)).sorted().joined(separator: ", ")
            logger.warning("job \(job): \(files.count) waiting upload(s) taken over from \(from), whose database session ended")
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
        guard let store = clusterStore, let location else { return .retry("no database or storage here") }
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
            guard try await store.queueMerged(row) else { return .done }
        } catch {
            logger.error("job \(job): the merged manifest cannot be queued (\(error)); tried again")
            return .retry("the merged manifest cannot be queued: \(error)")
        }
        logger.info("job \(job): merged manifest of \(folders.count) folder(s) and \(input.owners.count) owner(s) queued")
        return .done
    }
}
