import Bot
public import Foundation
public import Logging
public import ObjectStore
public import Webhooks
import Proof
import ServiceLifecycle
import Spool

/// What serve tells the world about its jobs beyond its API: a finished recording's folder
/// (files, manifest, proof) uploaded to object storage (`--storage`), and Standard Webhooks
/// (`--webhook-url`). Both are tasks of one queue (the state folder's, or with `--database`
/// the cluster's), worked by one loop, so a restart loses neither. A recording's `job.finished`
/// with storage waits until every file is uploaded and verified, and names the objects.
public final class JobPublishing: Sendable {
    /// The object store (`--storage`; nil: nothing uploaded).
    let storage: S3Client?
    let location: S3Location?
    /// Signs and POSTs the webhook tasks (nil: no `--webhook-url`).
    let webhooks: WebhookOutbox?
    /// The state folder's task queue (`tasks/`): webhooks and uploads, and with `--database` the
    /// events told here on their way to the database's (JobPublishing+Webhooks).
    let tasks: LocalTaskQueue
    /// Merged manifests waiting for their upload (JobPublishing+Merged).
    let mergedDirectory: URL
    /// `job.reconnecting` announced so far, by job (JobPublishing+Reconnects).
    let reconnects = Tally([String: ReconnectWatch]())
    /// `relay.started` / `relay.reconnecting` announced so far, by job (JobPublishing+Relays).
    let relays = Tally([String: RelayWatch]())
    let logger: Logger
    /// With `--database`: the cluster's task queue, which holds the uploads (JobPublishing+Cluster).
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
        parts = try Spool<RecordingPart>(directory: stateDirectory.appendingPathComponent("recording-parts"), what: "the recording folders held")
        (self.webhooks, self.logger, location, self.storage) = (webhooks, logger, storage?.location, storage)
        let tasks = try LocalTaskQueue(directory: stateDirectory.appendingPathComponent("tasks"),
                                       policy: TaskPolicy(schedule: webhooks?.schedule ?? TaskPolicy<DatabaseInstant>.standardSchedule),
                                       webhooks: webhooks != nil, logger: logger)
        self.tasks = tasks
        // What an older version left in its outbox and upload queue directories is tasks now.
        if webhooks != nil { Self.adoptOutbox(stateDirectory.appendingPathComponent("webhooks"), into: tasks, logger: logger) }
        Self.adoptUploads(stateDirectory, into: tasks, logger: logger)
    }

    /// Runs the task queue's worker until cancelled; what is left waits on disk (or in the
    /// database) for the next start.
    func run() async {
        // The one loop over this instance's task queue: the state folder's, or with --database
        // the cluster's, into which it moves the state folder's tasks first.
        var worker = TaskWorker(queue: tasks, webhooks: webhooks)
        if let store = clusterStore {
            worker = TaskWorker(queue: store, webhooks: webhooks, inbox: tasks)
            if storage != nil { worker.merge = { @Sendable job in await self.mergeTask(job) } }
        }
        if storage != nil { worker.upload = { @Sendable task in await self.uploadTask(task) } }
        guard !worker.kinds.isEmpty else { return }
        await worker.run(session: { self.session.value }, log: logger)
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
    func ended(job: String, kind: String, room: Int64, failed error: String?, folder: RecordingFolder?) {
        // With --database, job.failed is queued in the transaction that writes the end.
        if let error, clusterStore == nil { send(.jobFailed, JobEvent(job: job, kind: kind, room: room, reason: error), id: "\(job).failed") }
        guard let folder else {
            if error == nil { send(.jobFinished, JobEvent(job: job, kind: kind, room: room, files: []), id: "\(job).finished") }
            return
        }
        if storage != nil, clusterStore != nil { return }
        files.async { [self] in
            let found = listed(folder, job: job)
            guard let location, !found.isEmpty else {
                if error == nil {
                    send(.jobFinished, JobEvent(job: job, kind: kind, room: room, files: found.map { FileEvent(local: $0, in: folder) }), id: "\(job).finished")
                }
                return
            }
            var args = ["kind": kind, "room": "\(room)"]
            if error != nil { args["failed"] = "true" }
            let uploads = found.map { file in
                // By its shown path (all a try after a restart has), checked against the listed size and SHA-256.
                NewTask(kind: .upload, key: location.key("\(job)/\(file.name)"), job: job,
                        args: args.merging(["name": file.name, "file": folder.shown.appendingPathComponent(file.name).path,
                                            "size": "\(file.size)", "sha256": file.sha256]) { $1 })
            }
            do {
                // Together: none is tried (and found the last) before all are queued.
                try tasks.enqueue(uploads)
                logger.info("job \(job): \(found.count) file(s) queued for \(location)")
            } catch {
                logger.error("job \(job): cannot queue its files for upload: \(error); they stay in \(folder.shown.path)")
            }
        }
    }

    /// A recording's uploads, once its files were queued (nil before, or without storage).
    func uploads(of job: String) -> JobStatus.Uploads? { tasks.uploads(of: job) }

    /// A job forgotten by the service (--keep-finished) is forgotten here too.
    func forget(_ jobs: [String]) {
        tasks.forget(jobs)
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

/// The publishing queue's worker as a service of serve's group, listed before the jobs so that it
/// stops after them (their ends are queued first).
struct PublishingService: Service {
    let publishing: JobPublishing
    func run() async throws {
        await cancelWhenGracefulShutdown { await publishing.run() }
    }
}
