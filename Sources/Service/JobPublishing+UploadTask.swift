#if canImport(Glibc)
import Glibc
#endif
import CoreMetrics
import Foundation
import Locking
import Logging
import ObjectStore
import Spool
import Webhooks

/// An `upload` task's try (TaskWorker), one instance's or a cluster's: the file sent and
/// verified against the store's answer (ETags, then HEAD for size and SHA-256), the object kept
/// in the task, the local file deleted only then, and the task completed with the recording's
/// next step (`UploadLedger`: the queue that holds the task). A failed try keeps the file and
/// the task (TaskPolicy's backoff, never given up while the file is there); its
/// `upload.failed` on the first try and every tenth.
extension JobPublishing {
    /// The queue that holds the upload tasks: the cluster's, or the state folder's.
    var uploadLedger: any UploadLedger { clusterStore.map { $0 as any UploadLedger } ?? tasks }

    func uploadTask(_ task: QueuedTask) async -> RetryOutcome {
        guard let storage, let location else { return .retry("no storage here") }
        let store = uploadLedger, job = task.job ?? "-"
        let mergedKey = Self.mergedKey(job, location)
        var file = task.args["file"] ?? ""
        if let content = task.payload {
            // Inline (the merged manifest): written here first, whoever queued it.
            let path = mergedDirectory.appendingPathComponent("\(job).recording.json")
            let written: String? = await OffPool.run(on: files) {
                do {
                    try FileManager.default.createDirectory(at: path.deletingLastPathComponent(), withIntermediateDirectories: true,
                                                            attributes: [.posixPermissions: 0o700])
                    try Data(content.utf8).write(to: path, options: .atomic)
                    return nil
                } catch { return "\(error)" }
            }
            if let written { return .retry("\(path.path) cannot be written: \(written)") }
            file = path.path
        }
        if task.args["object"] == nil {
            let object: UploadedObject
            do throws(ObjectStoreError) {
                // The size and SHA-256 it was listed with (RecordingFiles, the proof's): what reaches the bucket is what the proof signs.
                let listed = task.args["size"].flatMap(Int.init).flatMap { size in task.args["sha256"].map { (size: size, sha256: $0) } }
                object = try await storage.upload(file: file, key: task.key, listed: listed)
            } catch {
                return await failed(task, file: file, "\(error)", retryable: error.retryable, store: store, mergedKey: mergedKey)
            }
            Counter(label: "sfubot_upload_bytes_total").increment(by: object.size)
            Counter(label: "sfubot_uploads_total").increment()
            logger.info("uploaded \(file) to \(object.url) (\(object.size) bytes, \(object.parts) part(s), verified)")
            do {
                guard try await store.noteUploaded(task, object) else { return .retry("no longer this instance's to upload") }
            } catch {
                return .retry("uploaded and verified, but the task queue cannot be told: \(error)")
            }
        }
        if let why = await delete(file) { return .retry("uploaded and verified, but \(file) cannot be deleted: \(why)") }
        do {
            // nil: freed meanwhile (its claim ran out); its next try only settles.
            guard try await store.endUpload(task, uploaded: true, why: nil, mergedKey: mergedKey) else { return .retry("no longer this instance's to settle") }
        } catch {
            // Tried again: the object is in the task, so the next try only tells the queue.
            return .retry("uploaded and verified, but the task queue cannot be told: \(error)")
        }
        return .done
    }

    /// A failed try. A file that is gone cannot be uploaded: given up (`missing`), the recording
    /// moved on; any other failure keeps the file and the task.
    private func failed(_ task: QueuedTask, file: String, _ why: String, retryable: Bool, store: any UploadLedger, mergedKey: String) async -> RetryOutcome {
        // Cut short by a shutdown: not the store's failure (the task is released as it was).
        if Task.isCancelled { return .retry("cancelled") }
        Counter(label: "sfubot_upload_failures_total").increment()
        logger.warning("job \(task.job ?? "-"): upload of \(file) to \(task.key) failed (try \(task.attempts + 1)): \(why)")
        // Its id names the file and the try: queued once, whichever instance tried.
        if let event = Self.uploadFailedEvent(job: task.job, file: file, key: task.key, why, attempts: task.attempts + 1) {
            do { try await store.enqueue(event, job: task.job) } catch { logger.error("webhook upload.failed of \(task.key): \(error)") }
        }
        guard !retryable else { return .retry(why) }
        let there = await OffPool.run(on: files) { FileManager.default.fileExists(atPath: file) }
        guard !there else { return .retry(why) }
        do {
            _ = try await store.endUpload(task, uploaded: false, why: why, mergedKey: mergedKey)
        } catch {
            return .retry("\(why); given up, but the task queue cannot be told: \(error)")
        }
        return .giveUp(why)
    }

    /// Deletes a verified upload's local copy; nil when done or already gone, else why not.
    private func delete(_ path: String) async -> String? {
        await OffPool.run(on: files) { () -> String? in
            unlink(path) == 0 || errno == ENOENT ? nil : String(cString: strerror(errno))
        }
    }
}
