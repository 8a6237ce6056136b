import Bot
import FrameCrypto
import Foundation
import Janus
import Locking
import Logging
import Metrics
import Proof
import ServiceLifecycle

/// Every job of the service: started, listed, stopped, persisted and, after a restart, taken
/// up again. A service of its own in the group: at a graceful shutdown it stops every job
/// (each finishes its files) before the process ends; jobs stopped that way stay "running" in
/// the state folder, so the next start resumes them. Where jobs are kept, and how a request
/// reaches the instance running one, is its store's (`JobStoreBackend`): one path for one
/// instance and for a cluster.
actor JobManager: Service {
    let config: ServeConfiguration
    /// The state folder (`LocalJobStore`) or, with `--database`, PostgreSQL (`ClusterStore`).
    let store: any JobStoreBackend
    var jobs: [String: Job] = [:]
    var order: [String] = []
    /// Output paths of jobs being prepared (between their check and their start).
    var reserved: [String: [String]] = [:]
    var shuttingDown = false
    let log: Logger
    /// With `--database` (Cluster/): the leases held and the jobs fenced (stopped for want of a lease).
    nonisolated let clusterOptions: ClusterOptions
    var fence: LeaseFence<ContinuousClock.Instant>
    var fenced: Set<String> = []
    var claiming = false
    /// The key of this instance's own database session while it lives (`ClusterLiveness`);
    /// no job is claimed without one.
    var liveSession: Int64?
    /// The session each held job was claimed under: its end stops them.
    var jobSessions: [String: Int64] = [:]

    init(config: ServeConfiguration, store: any JobStoreBackend) {
        self.config = config
        self.log = Self.logger(config)
        self.store = store
        clusterOptions = config.cluster ?? ClusterOptions(database: "", instanceID: "single")
        fence = LeaseFence(lease: clusterOptions.lease, margin: clusterOptions.margin)
    }

    /// The service's logger (its stores log as it does).
    static func logger(_ config: ServeConfiguration) -> Logger {
        var log = config.logger
        log[metadataKey: "component"] = "serve"
        return log
    }

    // MARK: - Service

    func run() async throws {
        let loops = await store.start(in: self)
        // Until the group shuts down gracefully; the job gauges meanwhile.
        await withTaskGroup(of: Void.self) { group in
            group.addTask { [weak self] in
                // Pruned every minute, or as often as --keep-finished if shorter.
                let pruneEvery = Int(min(60, max(1, self?.config.keepFinished ?? 60)))
                var tick = 0
                while !Task.isCancelled {
                    await self?.everySecond()
                    if tick % pruneEvery == 0 { await self?.pruneFinished() }
                    tick += 1
                    try? await Task.sleep(for: .seconds(1))
                }
            }
            try? await gracefulShutdown()
            group.cancelAll()
        }
        let stopped = await stopAll()
        await store.shutdown(stopped: stopped, in: self)
        loops?.cancel()
        await loops?.value
        publishGauges()
    }

    /// Every running job stopped at once, each finishing its files; answers their ids.
    @discardableResult
    private func stopAll() async -> [String] {
        shuttingDown = true
        let active = jobs.values.filter { $0.isActive && !fenced.contains($0.id) }
        guard !active.isEmpty else { return [] }
        log.info("stopping \(active.count) job(s): finishing their files")
        let started = ContinuousClock.now
        await withTaskGroup(of: Void.self) { group in
            for job in active { group.addTask { await job.stop() } }
        }
        log.info("every job stopped in \(ContinuousClock.now - started)")
        return active.map(\.id)
    }

    // MARK: - Jobs

    /// Starts a job. Its paths are checked lexically and claimed here (so two requests cannot
    /// both take one folder across the `await`), then prepared off the cooperative pool.
    func create(_ body: Data, kind: JobSpec.Kind) async throws(RequestProblem) -> JobStatus {
        guard !shuttingDown else { throw RequestProblem(status: 503, message: "the service is shutting down") }
        // With --database a job waits for whichever instance has room.
        try store.checkRoom(in: self)
        let spec = try JobSpec.parse(body, kind: kind)
        if let janus = spec.janus, !config.janusAllowed.allows(janus) {
            throw .field("janus", "\(janus) is not a Janus this service may use: the operator allows \(config.janusAllowed.urls.joined(separator: ", ")) (--janus-allow)")
        }
        try Self.checkRelay(spec, config.relayAllowed)
        try Self.checkToRoom(spec, config.janusAllowed)
        let roots = config.roots
        let paths = try JobPaths(spec, roots: roots)
        let claims = paths.claims(roots)
        try checkClaims(claims, room: spec.room, others: try await store.held(in: self))
        let id = Self.newID(kind)
        reserved[id] = claims
        defer { reserved[id] = nil }
        let prepared = try await OffPool.run { () throws(RequestProblem) in try JobPreparation(spec, paths: paths, roots: roots, fresh: true) }
        do throws(RequestProblem) {
            if kind == .recording, let outputs = prepared.outputs {
                // The recorder's own check of its folder and mix (through the folders the walk
                // opened), off the pool too: an open can wait on a slow disk.
                let check = Recorder(config: botConfig(for: paths.canonicalSpec(spec, roots: roots), id: id, protection: prepared.protection),
                                     folder: outputs.folder, mix: outputs.mix)
                try await OffPool.run { () throws(RequestProblem) in
                    do { try check.checkOutputs() } catch { throw RequestProblem(status: 400, message: "out: \(error)") }
                }
            }
            guard !shuttingDown else { throw RequestProblem(status: 503, message: "the service is shutting down") }
            return try await store.admit(Admission(id: id, spec: spec, paths: paths, prepared: prepared), in: self)
        } catch {
            prepared.discard()
            throw error
        }
    }

    /// Jobs that may still start before `--max-jobs` is reached.
    var freeCapacity: Int { max(0, config.maxJobs - jobs.values.filter(\.isActive).count - reserved.count) }

    /// One recording per folder, and no folder inside another's: two would write the same
    /// manifest.json, or one would write among the other's files.
    private func checkClaims(_ claims: [String], room: Int64, others: [HeldPaths]) throws(RequestProblem) {
        let held = jobs.values.filter(\.isActive).map { ($0.id, Optional($0.spec.room), [$0.spec.out, $0.spec.mix].compactMap { $0 }) }
            + reserved.map { ($0.key, Int64?.none, $0.value) } + others
        for claim in claims {
            for (other, otherRoom, paths) in held {
                guard let path = paths.first(where: { JobPaths.overlap($0, claim) }) else { continue }
                throw RequestProblem(status: 409, message: otherRoom == room
                    ? "room \(room) is already being recorded into \(path) by job \(other)"
                    : "\(claim) overlaps \(path), in use by job \(other): give each recording its own folder")
            }
        }
    }

    func status(_ id: String) async throws(RequestProblem) -> JobStatus {
        try await store.status(of: id, in: self)
    }

    private static func newID(_ kind: JobSpec.Kind) -> String {
        (kind == .recording ? "rec-" : kind == .playback ? "play-" : "relay-") + UUID().uuidString.lowercased().prefix(13).replacingOccurrences(of: "-", with: "")
    }

    // MARK: - Running

    /// `startAt`: a playback goes on from there in its file (taken over from another instance).
    /// `media`: a playback's file, held open since its check (read through it, not by name);
    /// `outputs`: a recording's folders, held open since their check (written through them).
    func launch(id: String, spec: JobSpec, protection: FrameProtection, media: HeldFile?, outputs: HeldOutputs?, created: Date, resumes: Int,
                startAt: Double? = nil,
                pauses: [RecordingManifest.Pause]? = nil, takeover: ChainTakeover? = nil) throws(RequestProblem) -> Job {
        // A live source in (`from`) is a player: paused, it holds the source back.
        let pause = JobPause(spec.kind == .relay && spec.from != nil ? .playback : spec.kind, resuming: pauses)
        let botConfig = botConfig(for: spec, id: id, protection: protection)
        let remaining = spec.durationSeconds.map { created.addingTimeInterval($0).timeIntervalSinceNow }
        if let remaining, remaining <= 0, resumes > 0 {
            // Its time was up while the service was away.
            let job = Job(id: id, spec: spec, created: created, resumes: resumes, live: LiveStatus(), sent: nil)
            finish(job, Job.Outcome(state: .done, ended: Date(), error: nil))
            return job
        }
        let duration = remaining.map { Duration.seconds(max(0.1, $0)) }
        let job: Job
        switch spec.kind {
        case .recording:
            guard let outputs else { throw RequestProblem(status: 500, message: "job \(id): its folder was not opened below --output-root") }
            var recorder = Recorder(config: botConfig, folder: outputs.folder, duration: duration, mix: outputs.mix)
            recorder.resume = resumes > 0
            recorder.signingKey = config.signingKey
            recorder.takeover = takeover
            // One identity for every instance that records the job: its id, room, Janus, creation.
            recorder.identity = RecordingIdentity(id: id, room: spec.room, janus: botConfig.janusURL, started: created, job: id)
            recorder.instance = clusterOptions.instanceID
            if case .recording(let pauses) = pause { recorder.pauses = pauses }
            job = Job(id: id, spec: spec, created: created, resumes: resumes, live: recorder.status, sent: nil, pause: pause, chainHead: recorder.chainHead,
                      keys: protection.indexedKeys, folder: outputs.folder)
            let configured = recorder
            // Errors name the folders as the job gave them, never their /proc/self/fd paths.
            let show: @Sendable (String) -> String = { text in
                let inFolder = outputs.folder.showing(text)
                return outputs.mix?.folder.showing(inFolder) ?? inFolder
            }
            job.start { await Self.outcome(of: job, show: show) { () async throws(BotError) in
                // Whatever ended it, a recording that lost something is a failed job.
                let manifest = try await configured.run()
                if manifest.lostSomething { throw .incomplete(manifest.errors.map(\.error).joined(separator: "; ")) }
            } }
        case .playback:
            var configured = Player(config: botConfig, source: .file(media?.path ?? spec.file!), loop: spec.loop, duration: duration)
            configured.startAt = startAt
            if case .playback(let pauses) = pause { configured.pauses = pauses }
            let player = configured
            job = Job(id: id, spec: spec, created: created, resumes: resumes, live: player.status, sent: (player.stats, player.videoStats),
                      played: player.played, pause: pause, keys: protection.indexedKeys)
            let named = media.map { ($0.path, spec.file!) }  // errors name the file the job gave
            let show: @Sendable (String) -> String = { text in named.map { text.replacingOccurrences(of: $0.0, with: $0.1) } ?? text }
            job.start { await Self.outcome(of: job, show: show) { () async throws(BotError) in
                _ = try await player.run()
                withExtendedLifetime(media) {}  // open until the player is done with it
            } }
        case .relay:
            job = try relayJob(id: id, spec: spec, config: botConfig, created: created, resumes: resumes, duration: duration, pause: pause,
                               keys: protection.indexedKeys)
        }
        jobs[id] = job
        order.append(id)
        persist(job)
        log.info("job \(id): \(spec.kind.rawValue) of room \(spec.room)\(resumes > 0 ? " resumed (\(resumes))" : "")")
        config.publishing?.started(job: id, kind: spec.kind.rawValue, room: spec.room, resumes: resumes)
        Task { [weak self] in
            await job.wait()
            await self?.ended(job)
        }
        return job
    }

    static func outcome(of job: Job, show: @Sendable (String) -> String, _ body: @Sendable () async throws(BotError) -> Void) async -> Job.Outcome {
        do {
            try await body()
            return .init(state: .done, ended: Date(), error: nil)
        } catch {
            // A stop asked for is a clean end, whatever the step it interrupted said.
            if job.stopRequested && !error.isLoss && (error.isStopped || Task.isCancelled) { return .init(state: .done, ended: Date(), error: nil) }
            return .init(state: .failed, ended: Date(), error: show(error.description))
        }
    }

    func ended(_ job: Job) {
        guard let outcome = job.outcome else { return }
        // Whichever way it ended, its folder's descriptor closes once its end is published.
        let folder = job.releaseFolder()
        // Taken again here after a fence, the job has a later run: this one's end is not the job's.
        guard jobs[job.id] === job else {
            log.info("job \(job.id): an earlier run here stopped writing; the job runs on")
            return
        }
        if fenced.remove(job.id) != nil {
            // Not this instance's to end: whoever takes the job next carries on. Forgotten here,
            // so that GET reads the database: this run's end is no outcome (issue 44).
            log.info("job \(job.id) stopped writing (fenced); its outcome is left to the next owner")
            if jobs[job.id] === job {
                jobs[job.id] = nil
                order.removeAll { $0 == job.id }
            }
            return
        }
        log.info("job \(job.id) \(outcome.state.rawValue)\(outcome.error.map { ": \($0)" } ?? "")")
        // Stopped by the shutdown: left "running" on disk, to be resumed.
        if shuttingDown && outcome.state == .done && job.stopRequested { return }
        publishEnded(job, outcome, folder: folder)
        persist(job)
    }

    func finish(_ job: Job, _ outcome: Job.Outcome) {
        job.settle(outcome)
        jobs[job.id] = job
        order.append(job.id)
        persist(job)
    }
}
