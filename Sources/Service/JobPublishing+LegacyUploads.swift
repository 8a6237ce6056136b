#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Logging
import ObjectStore
import Spool

/// What an older version's upload queue left in the state folder, read once at start and
/// queued as `upload` tasks (then removed): `uploads/`, a file per object to send (its tries,
/// next try, and its object if it was verified before a crash), and `upload-batches/`, a
/// recording's files with those already uploaded or given up, which `job.finished` names.
extension JobPublishing {
    /// An entry of `uploads/` (the former `UploadEntry`).
    struct LegacyUpload: Codable, Sendable {
        var file: String
        var key: String
        var context: [String: String]
        var attempts: Int
        var notBefore: Date
        var created: Date
        var lastError: String?
        var uploaded: UploadedObject?
    }

    /// An entry of `upload-batches/`: one recording's files.
    struct LegacyBatch: Codable, Sendable {
        var job: String
        var kind: String
        var room: Int64
        var failed: Bool
        var files: [File]
        var objects: [String: UploadedObject]
        var missing: Set<String>

        struct File: Codable, Sendable {
            var key: String
            var name: String
        }
    }

    /// Each batch's files as one recording's tasks (uploaded: completed with its object; given
    /// up: discarded; queued: as its entry stood; never queued, a crash in between: discarded,
    /// named missing), then the entries no batch names. Each old file is removed once its tasks
    /// are on disk; one that cannot be queued stays for the next start.
    static func adoptUploads(_ stateDirectory: URL, into tasks: LocalTaskQueue, logger: Logger) {
        let queueDirectory = stateDirectory.appendingPathComponent("uploads"), batchDirectory = stateDirectory.appendingPathComponent("upload-batches")
        let fm = FileManager.default
        guard fm.fileExists(atPath: queueDirectory.path) || fm.fileExists(atPath: batchDirectory.path),
              let queue = try? Spool<LegacyUpload>(directory: queueDirectory, what: "the former upload queue"),
              let batches = try? Spool<LegacyBatch>(directory: batchDirectory, what: "the former upload batches") else { return }
        var entries = Dictionary(queue.load().entries.map { ($0.entry.key, $0) }, uniquingKeysWith: { a, _ in a })
        var adopted = 0
        let encoder = JSONEncoder()
        func object(_ o: UploadedObject?) -> String? { o.flatMap { try? encoder.encode($0) }.map { String(decoding: $0, as: UTF8.self) } }
        for (id, batch) in batches.load().entries {
            var args = ["kind": batch.kind, "room": "\(batch.room)"]
            if batch.failed { args["failed"] = "true" }
            let files = batch.files.map { f in
                NewTask(kind: .upload, key: f.key, job: batch.job, args: args.merging(["name": f.name, "file": entries[f.key]?.entry.file ?? ""]) { $1 })
            }
            do {
                try tasks.enqueue(files) { task, e in
                    if let done = batch.objects[task.key] {
                        (e.ended, e.attempts) = (.completed, 1)
                        e.args["object"] = object(done)
                    } else if let queued = entries[task.key]?.entry {
                        (e.attempts, e.lastError, e.runAt, e.created) = (queued.attempts, queued.lastError, queued.notBefore, queued.created)
                        e.args["object"] = object(queued.uploaded)
                    } else {
                        (e.ended, e.attempts, e.lastError) = (.discarded, 1, batch.missing.contains(task.key) ? "its file was gone" : "not queued by the version before")
                    }
                }
                try tasks.finishIfSettled(batch.job)
                for f in batch.files {
                    if let (queuedID, _) = entries.removeValue(forKey: f.key) { try queue.remove(queuedID) }
                }
                try batches.remove(id)
                adopted += files.count
            } catch {
                logger.error("job \(batch.job): its uploads of the former upload queue cannot be queued as tasks (\(error)); they stay in \(batchDirectory.path)")
            }
        }
        for (key, (queuedID, entry)) in entries {
            let task = NewTask(kind: .upload, key: key, job: entry.context["job"],
                               args: ["name": URL(fileURLWithPath: entry.file).lastPathComponent, "file": entry.file])
            do {
                try tasks.enqueue([task]) { _, e in
                    (e.attempts, e.lastError, e.runAt, e.created) = (entry.attempts, entry.lastError, entry.notBefore, entry.created)
                    e.args["object"] = object(entry.uploaded)
                }
                try queue.remove(queuedID)
                adopted += 1
            } catch {
                logger.error("the upload of \(entry.file) cannot be queued as a task (\(error)); it stays in \(queueDirectory.path)")
            }
        }
        // Gone once empty: nothing reads them again.
        rmdir(queueDirectory.path)
        rmdir(batchDirectory.path)
        if adopted > 0 { logger.info("\(adopted) upload(s) of the former upload queue queued as tasks") }
    }
}
