public import Foundation
public import Logging
public import ObjectStore
public import Webhooks
import ServiceLifecycle
import Spool

/// What serve tells the world about its jobs beyond its API: a finished recording's folder
/// (files, manifest, proof) uploaded to object storage (`--storage`), and Standard Webhooks
/// (`--webhook-url`). Both go through durable queues in the state directory, so a restart loses
/// neither. A recording's `job.finished` with storage waits until every file is uploaded and
/// verified, and names the objects; the job's upload batch waits in the state directory meanwhile.
public final class JobPublishing: Sendable {
    /// The object store (`--storage`; nil: nothing uploaded).
    let storage: S3Client?
    /// One instance's uploads (without `--database`; with it, `upload` tasks: JobPublishing+UploadTask).
    let uploads: UploadQueue?
    let location: S3Location?
    /// Signs and POSTs the webhook tasks (nil: no `--webhook-url`).
    let webhooks: WebhookOutbox?
    /// The state folder's task queue (`tasks/`): webhooks, and with `--database` the events told
    /// here on their way to the database's (JobPublishing+Webhooks).
    let tasks: LocalTaskQueue
    let batches: Spool<UploadBatch>
    /// Each recording's uploads as GET shows them (from the batches at start, then kept here).
    let progress: Tally<[String: JobStatus.Uploads]>
    /// Merged manifests waiting for their upload (JobPublishing+Merged).
    let mergedDirectory: URL
    /// `job.reconnecting` announced so far, by job (JobPublishing+Reconnects).
    let reconnects = Tally([String: ReconnectWatch]())
    /// `relay.started` / `relay.reconnecting` announced so far, by job (JobPublishing+Relays).
    let relays = Tally([String: RelayWatch]())
    let logger: Logger
    /// With `--database`: the uploads' table, which replaces `batches` and `progress`
    /// (JobPublishing+Cluster).
    let cluster = Tally<ClusterStore?>(nil)
    /// This instance's live database session, for the rows it queues (set by each sweep).
    let session = Tally<Int64?>(nil)
    /// With `--database`: the recording folders this instance wrote, each queued once its job
    /// has ended (JobPublishing+Folders).
    let parts: Spool<RecordingPart>
    /// Hashing a recording reads all of it: off Swift's cooperative pool.
    let files = DispatchQueue(label: "sfubot.publishing.files")

    /// `storage` nil: nothing uploaded; `webhook` nil: nothing sent.
    public init(stateDirectory: URL, storage: S3Client?, webhook: (url: URL, secret: WebhookSecret)?, logger: Logger) throws {
        mergedDirectory = stateDirectory.appendingPathComponent("merged")
        let webhooks = try webhook.map { try WebhookOutbox(directory: stateDirectory.appendingPathComponent("webhooks"), url: $0.url, secret: $0.secret, logger: logger) }
        let batches = try Spool<UploadBatch>(directory: stateDirectory.appendingPathComponent("upload-batches"), what: "the upload batches")
        parts = try Spool<RecordingPart>(directory: stateDirectory.appendingPathComponent("recording-parts"), what: "the recording folders held")
        let progress = Tally(Dictionary(uniqueKeysWithValues: batches.load().entries.map { ($0.id, JobStatus.Uploads($0.entry)) }))
        (self.webhooks, self.batches, self.progress, self.logger, location, self.storage) = (webhooks, batches, progress, logger, storage?.location, storage)
        let tasks = try LocalTaskQueue(directory: stateDirectory.appendingPathComponent("tasks"),
                                       policy: TaskPolicy(schedule: webhooks?.schedule ?? TaskPolicy<DatabaseInstant>.standardSchedule), logger: logger)
        self.tasks = tasks
        // Events an older version left in its outbox directory are tasks now.
        if webhooks != nil { Self.adoptOutbox(stateDirectory.appendingPathComponent("webhooks"), into: tasks, logger: logger) }
        let webhookTasks = webhooks == nil ? nil : tasks
        @Sendable func settle(_ entry: UploadEntry, _ object: UploadedObject?) async {
            Self.settled(entry, object, batches: batches, progress: progress, webhooks: webhookTasks, logger: logger)
        }
        uploads = try storage.map { client in
            try UploadQueue(directory: stateDirectory.appendingPathComponent("uploads"), client: client, logger: logger,
                            uploaded: { entry, object in await settle(entry, object) },
                            failed: { entry, why, givenUp in
                                Self.uploadFailed(entry, why, progress: progress, webhooks: webhookTasks, logger: logger)
                                if givenUp { await settle(entry, nil) }
                            })
        }
    }

    /// Runs the upload queue and the task queue's worker until cancelled; what is left waits on
    /// disk (or in the database) for the next start.
    func run() async {
        await withTaskGroup(of: Void.self) { group in
            // The one loop over this instance's task queue: the state folder's, or with
            // --database the cluster's (uploads among its tasks), into which it moves the state
            // folder's tasks first.
            var worker = TaskWorker(queue: tasks, webhooks: webhooks)
            if let store = clusterStore {
                worker = TaskWorker(queue: store, webhooks: webhooks, inbox: tasks)
                if storage != nil {
                    worker.merge = { @Sendable job in await self.mergeTask(job) }
                    worker.upload = { @Sendable task in await self.uploadTask(task) }
                }
            } else if let uploads {
                group.addTask { await uploads.run() }
            }
            guard !worker.kinds.isEmpty else { return }
            group.addTask { [worker] in await worker.run(session: { self.session.value }, log: self.logger) }
        }
    }

    // MARK: - Hooks (JobManager)

    func started(job: String, kind: String, room: Int64, resumes: Int) {
        send(.jobStarted, JobEvent(job: job, kind: kind, room: room, resumes: resumes), id: "\(job).started.\(resumes)")
    }

    /// `job.paused` / `job.resumed`; the pause's number in the job makes the id stable.
    func paused(job: String, kind: String, room: Int64, paused: Bool, pause number: Int) {
        send(paused ? .jobPaused : .jobResumed, JobEvent(job: job, kind: kind, room: room),
             id: "\(job).\(paused ? "paused" : "resumed").\(number)")
    }

    /// `job.failed_over`: this instance took the job over from `previous`, whose lease ran out.
    func failedOver(job: String, kind: String, room: Int64, from previous: String, resumes: Int) {
        send(.jobFailedOver, JobEvent(job: job, kind: kind, room: room, resumes: resumes, reason: "taken over from \(previous), whose lease ran out"),
             id: "\(job).failed_over.\(resumes)")
    }

    /// A job ended (not one stopped by a shutdown: that one is resumed). A recording's folder
    /// is queued for upload (with `--database`, by the folder sweep instead); `job.failed` says
    /// why a job failed, `job.finished` what it made.
    func ended(job: String, kind: String, room: Int64, failed error: String?, directory: String?) {
        // With --database, job.failed is queued in the transaction that writes the end.
        if let error, clusterStore == nil { send(.jobFailed, JobEvent(job: job, kind: kind, room: room, reason: error), id: "\(job).failed") }
        guard let directory else {
            if error == nil { send(.jobFinished, JobEvent(job: job, kind: kind, room: room, files: []), id: "\(job).finished") }
            return
        }
        if storage != nil, clusterStore != nil { return }
        files.async { [self] in
            let found = Self.localFiles(directory, hash: uploads == nil)
            guard let uploads, let location else {
                if error == nil {
                    send(.jobFinished, JobEvent(job: job, kind: kind, room: room, files: found.map(FileEvent.init(local:))), id: "\(job).finished")
                }
                return
            }
            let entries = found.map { BatchFile(key: location.key("\(job)/\($0.relative)"), name: $0.relative) }
            do {
                // The batch first: an upload that finishes at once finds it.
                let batch = UploadBatch(job: job, kind: kind, room: room, failed: error != nil, files: entries)
                try batches.add(job, batch)
                progress.update { $0[job] = JobStatus.Uploads(batch) }
                for (file, entry) in zip(found, entries) { try uploads.enqueue(file: file.path, key: entry.key, context: ["job": job]) }
                logger.info("job \(job): \(found.count) file(s) queued for \(location)")
            } catch {
                logger.error("job \(job): cannot queue its files for upload: \(error); they stay in \(directory)")
            }
        }
    }

    // MARK: - Upload results

    /// A file of a job's batch is uploaded (`object`), or given up (nil: the file vanished before
    /// it could be sent); once every file is one or the other, `job.finished` names them.
    static func settled(_ entry: UploadEntry, _ object: UploadedObject?, batches: Spool<UploadBatch>, progress: Tally<[String: JobStatus.Uploads]>,
                        webhooks: LocalTaskQueue?, logger: Logger) {
        guard let job = entry.context["job"] else { return }
        do {
            guard var batch = try batches.get(job) else { return }
            if let object { batch.objects[object.key] = object } else { batch.missing.insert(entry.key) }
            progress.update { $0[job] = JobStatus.Uploads(batch, before: $0[job]) }
            guard batch.files.allSatisfy({ batch.objects[$0.key] != nil || batch.missing.contains($0.key) }) else {
                try batches.put(job, batch)
                return
            }
            if !batch.failed, let webhooks {
                let files = batch.files.compactMap { f in batch.objects[f.key].map { FileEvent(name: f.name, object: $0) } }
                let missing = batch.files.filter { batch.missing.contains($0.key) }.map(\.name)
                let event = try WebhookEvent(.jobFinished, data: JobEvent(job: job, kind: batch.kind, room: batch.room, files: files,
                                                                          missing: missing.isEmpty ? nil : missing), id: "\(job).finished")
                try webhooks.enqueue(NewTask(webhook: event, job: job))
            }
            try batches.remove(job)
        } catch {
            logger.error("job \(job): \(error)")
        }
    }

    static func uploadFailed(_ entry: UploadEntry, _ why: String, progress: Tally<[String: JobStatus.Uploads]>, webhooks: LocalTaskQueue?, logger: Logger) {
        if let job = entry.context["job"] {
            progress.update { p in
                p[job]?.failedTries += 1
                p[job]?.lastError = why
            }
        }
        // On a file's first failure and every tenth after: a store down for hours does not
        // flood the receiver.
        guard let webhooks, let event = uploadFailedEvent(entry, why, attempts: entry.attempts + 1) else { return }
        do { try webhooks.enqueue(NewTask(webhook: event, job: entry.context["job"])) } catch { logger.error("webhook upload.failed: \(error)") }
    }

    /// A recording's uploads, once its files were queued (nil before, or without storage).
    func uploads(of job: String) -> JobStatus.Uploads? { progress.value[job] }

    /// A job forgotten by the service (--keep-finished) is forgotten here too.
    func forget(_ jobs: [String]) {
        progress.update { p in for job in jobs { p[job] = nil } }
        reconnects.update { r in for job in jobs { r[job] = nil } }
    }

    /// Into the state folder's task queue (with `--database`, on its way to the cluster's: JobPublishing+Webhooks).
    func send(_ type: WebhookEventType, _ data: JobEvent, id: String) {
        guard webhooks != nil else { return }
        do {
            let event = try WebhookEvent(type, data: data, id: id)
            try tasks.enqueue(NewTask(webhook: event, job: data.job))
        } catch { logger.error("webhook \(type.rawValue): \(error)") }
    }
}

/// The publishing queues as a service of serve's group, listed before the jobs so that it
/// stops after them (their ends are queued first).
struct PublishingService: Service {
    let publishing: JobPublishing
    func run() async throws {
        await cancelWhenGracefulShutdown { await publishing.run() }
    }
}
