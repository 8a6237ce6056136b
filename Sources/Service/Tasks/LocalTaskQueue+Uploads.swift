import Foundation
import Locking
import Logging
import ObjectStore
import Spool
import Synchronization
import Webhooks

/// One instance's uploads (no `--database`): a recording's files are `upload` tasks of the state
/// folder's queue, queued together when it ends and each tried by the cluster's code
/// (JobPublishing+UploadTask). An upload's end stays in its task (completed with its object, or
/// discarded: its file vanished) as long as its job, as the cluster's table keeps it: GET's
/// `uploads` is counted from them, and the end of a job's last open upload queues `job.finished`
/// naming every object, under the same lock and written before that end. Each task's args
/// carry its job's `kind` and `room` for it (and `failed` for a job that failed: none sent).
extension LocalTaskQueue: UploadLedger {
    func noteUploaded(_ task: QueuedTask, _ object: UploadedObject) async throws -> Bool {
        let json = String(decoding: try JSONEncoder().encode(object), as: UTF8.self)
        return try await change(task) { entry, _ throws(SpoolError) in entry.args["object"] = json }
    }

    func endUpload(_ task: QueuedTask, uploaded: Bool, why: String?, mergedKey: String) async throws -> Bool {
        let webhooks = self.webhooks, spool = self.spool, name = Self.name(.upload, task.key)
        let ended = try await change(task, release: true) { entry, tasks throws(SpoolError) in
            (entry.ended, entry.attempts, entry.lastError) = (uploaded ? .completed : .discarded, entry.attempts + 1, why)
            var after = tasks
            after[name] = entry
            // Before the end is written: a crash between the two sends it twice (at least once), never not.
            if webhooks, let job = entry.job, let event = Self.finishedEvent(job, after) {
                _ = try Self.insert(NewTask(webhook: event, job: job), into: &tasks, spool: spool, now: Date())
            }
        }
        if ended { added.signal() }
        return ended
    }

    @discardableResult
    func enqueue(_ event: WebhookEvent, job: String?) async throws -> Bool {
        guard webhooks else { return false }
        let task = NewTask(webhook: event, job: job)
        return try await OffPool.run(on: io) { () throws(SpoolError) -> Bool in try self.enqueue(task) }
    }

    /// `job.finished` queued if none of `job`'s uploads is open (an older version's batch whose
    /// files had all ended before it could send it).
    func finishIfSettled(_ job: String) throws(SpoolError) {
        guard webhooks else { return }
        let spool = self.spool
        try state.withLock { s throws(SpoolError) in
            guard let event = Self.finishedEvent(job, s.tasks) else { return }
            _ = try Self.insert(NewTask(webhook: event, job: job), into: &s.tasks, spool: spool, now: Date())
        }
    }

    /// A recording's uploads as GET shows them (nil: none queued), counted as the cluster counts
    /// its rows: a task's `attempts` counts its successful try too.
    func uploads(of job: String) -> JobStatus.Uploads? {
        state.withLock { s -> JobStatus.Uploads? in
            let files = s.tasks.values.filter { $0.kind == .upload && $0.job == job }
            guard !files.isEmpty else { return nil }
            let open = files.filter { $0.ended == nil }, uploaded = files.filter { $0.ended == .completed }.count
            return JobStatus.Uploads(pending: open.count, uploaded: uploaded, missing: files.count - open.count - uploaded,
                                     failedTries: files.map(\.attempts).reduce(0, +) - uploaded,
                                     lastError: open.filter { $0.lastError != nil }.max { $0.runAt < $1.runAt }?.lastError)
        }
    }

    /// The ended uploads of jobs the service forgot (`--keep-finished`); an open one stays (its
    /// file is still to be sent).
    func forget(_ jobs: [String]) {
        let gone = Set(jobs)
        io.async { [self] in
            let names = state.withLock { s -> [String] in
                let names = s.tasks.filter { $0.value.ended != nil && $0.value.job.map(gone.contains) == true }.map(\.key)
                for name in names { s.tasks[name] = nil }
                return names
            }
            for name in names {
                do { try spool.remove(name) } catch { logger.warning("the task queue: \(error); it is read again at the next start") }
            }
        }
    }

    /// `job.finished` once none of `job`'s uploads is open: every object by its file's name, the
    /// files that vanished as `missing`. Nil while one is open, for a job that failed, or for
    /// files whose job is not known (an older version's entry with no batch).
    static func finishedEvent(_ job: String, _ tasks: [String: Entry]) -> WebhookEvent? {
        let files = tasks.values.filter { $0.kind == .upload && $0.job == job }.map { (name: $0.args["name"] ?? $0.key, entry: $0) }.sorted { $0.name < $1.name }
        guard let first = files.first?.entry, files.allSatisfy({ $0.entry.ended != nil }), first.args["failed"] == nil,
              let kind = first.args["kind"], let room = first.args["room"].flatMap({ Int64($0) }) else { return nil }
        let decoder = JSONDecoder()
        let objects = files.map { f in
            (f.name, f.entry.ended == .completed ? f.entry.args["object"].flatMap { try? decoder.decode(UploadedObject.self, from: Data($0.utf8)) } : nil)
        }
        let missing = objects.filter { $0.1 == nil }.map(\.0)
        let data = JobEvent(job: job, kind: kind, room: room, files: objects.compactMap { name, object in object.map { FileEvent(name: name, object: $0) } },
                            missing: missing.isEmpty ? nil : missing)
        return try? WebhookEvent(.jobFinished, data: data, id: "\(job).finished")
    }

    /// `body` applied to `task`'s entry (still this process's claim) and written; `release`:
    /// the claim ends with it. False: not claimed here, nothing written.
    private func change(_ task: QueuedTask, release: Bool = false,
                        _ body: @escaping @Sendable (inout Entry, inout [String: Entry]) throws(SpoolError) -> Void) async throws(SpoolError) -> Bool {
        let name = Self.name(task.kind, task.key), spool = self.spool
        return try await OffPool.run(on: io) { [self] () throws(SpoolError) -> Bool in
            try state.withLock { s throws(SpoolError) -> Bool in
                guard s.claimed.contains(name), var entry = s.tasks[name] else { return false }
                try body(&entry, &s.tasks)
                try spool.put(name, entry)
                s.tasks[name] = entry
                if release { s.claimed.remove(name) }
                return true
            }
        }
    }
}
