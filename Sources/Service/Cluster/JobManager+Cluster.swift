import Bot
import Foundation
import Locking
import PostgresNIO
import Proof
import Synchronization
import Logging
import Metrics

/// `--database`: the jobs this instance runs are the ones it claimed; the database holds all
/// of them. Five loops run beside the jobs: this instance's own session (`ClusterLiveness`),
/// LISTEN (new jobs, stops), claiming (and noticing others' sessions gone), renewing the
/// leases (publishing each job's status with it), and the fence that stops a job whose lease
/// could not be renewed in time (`LeaseFence`, docs/cluster.md).
extension JobManager {
    func runCluster(_ store: ClusterStore) async {
        await registerInstance(store)
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await ClusterLiveness.run(store.session, instance: store.instance, maxJobs: self.config.maxJobs, options: self.clusterOptions, log: self.log.forPostgres,
                                          up: { await self.sessionUp($0) }, lost: { await self.sessionLost($0, because: $1) })
            }
            group.addTask { await self.listen(store) }
            group.addTask {
                // New jobs come by NOTIFY; expired leases and ended sessions only show by looking.
                var tick = 0
                while !Task.isCancelled {
                    do {
                        for gone in try await store.sweepSessions() {
                            self.log.warning("cluster: the database session of \(gone) ended; its jobs are taken \(self.clusterOptions.takeoverGrace) later")
                        }
                    } catch { self.log.warning("cluster: cannot look at the other instances' sessions: \(error)") }
                    await self.claimAvailable(store)
                    // Uploads wait for the store anyway: once a second is soon enough.
                    if tick % 4 == 0, let session = await self.liveSession {
                        await self.config.publishing?.sweep(session: session, grace: self.clusterOptions.takeoverGrace)
                    }
                    if tick % 4 == 0, let waiting = try? await store.waiting() { Gauge(label: "sfubot_cluster_jobs_waiting").record(waiting) }
                    tick += 1
                    try? await Task.sleep(for: .milliseconds(250))
                }
            }
            group.addTask {
                while !Task.isCancelled {
                    await self.renew(store)
                    try? await Task.sleep(for: self.clusterOptions.renewEvery)
                }
            }
            group.addTask {
                while !Task.isCancelled {
                    await self.fenceDue()
                    try? await Task.sleep(for: .milliseconds(100))
                }
            }
            await group.waitForAll()
        }
    }

    private func listen(_ store: ClusterStore) async {
        while !Task.isCancelled {
            do {
                try await store.client.withConnection { connection in
                    try await connection.listen(on: ClusterStore.channel) { notifications in
                        for try await note in notifications { await self.notified(note.payload, store) }
                    }
                }
            } catch {
                if Task.isCancelled { return }
                log.warning("cluster: LISTEN failed (\(error)); again in 1 s")
            }
            try? await Task.sleep(for: .seconds(1))
        }
    }

    private func notified(_ payload: String, _ store: ClusterStore) async {
        if payload.hasPrefix("stop ") {
            let id = String(payload.dropFirst(5))
            guard let job = jobs[id], job.isActive, !fenced.contains(id) else { return }
            log.info("job \(id): stop asked through another instance")
            Task { _ = try? await self.stop(id) }
        } else if let (id, paused) = Self.pauseNote(payload) {
            guard let job = jobs[id], job.isActive, !fenced.contains(id) else { return }
            log.info("job \(id): \(paused ? "pause" : "resume") asked through another instance")
            Task { _ = try? await self.setPaused(id, paused) }
        } else {
            await claimAvailable(store)
        }
    }

    /// `pause <id>` / `resume <id>`.
    static func pauseNote(_ payload: String) -> (String, Bool)? {
        for (word, paused) in [("pause ", true), ("resume ", false)] where payload.hasPrefix(word) {
            return (String(payload.dropFirst(word.count)), paused)
        }
        return nil
    }

    /// Takes waiting jobs (and those whose owner's lease ran out) while there is room.
    func claimAvailable(_ store: ClusterStore) async {
        guard !claiming else { return }
        claiming = true
        defer { claiming = false }
        while freeCapacity > 0, !shuttingDown, !Task.isCancelled {
            // A job claimed without a live session could be taken from this instance at once.
            guard let session = liveSession else { return }
            let sent = ContinuousClock.now
            let claim: ClusterStore.Claim?
            do { claim = try await store.claim(session: session, grace: clusterOptions.takeoverGrace) } catch {
                log.warning("cluster: cannot look for jobs to take: \(error)")
                return
            }
            guard let claim else { return }
            fence.renewed(claim.row.id, sentAt: sent)
            jobSessions[claim.row.id] = session
            if let previous = claim.previous {
                Counter(label: "sfubot_cluster_failovers_total").increment()
                log.warning("job \(claim.row.id): taken over from \(previous), whose \(claim.expired ? "lease ran out" : "database session ended")")
            }
            await take(claim.row, previous: claim.previous, lastOwner: claim.lastOwner, store)
            // Its session ended while it was being started: the others may take it already.
            if liveSession != session { stopWriting(claim.row.id, because: "this instance's database session ended as it was taken") }
            if let previous = claim.previous, let job = jobs[claim.row.id] {
                config.publishing?.failedOver(job: job.id, kind: job.spec.kind.rawValue, room: job.spec.room, from: previous, resumes: job.resumes)
            }
        }
    }

    /// Starts a claimed job as a restart does: its folder keeps its files, a recording goes on
    /// in new segment files with the time away as a gap in its manifest.
    private func take(_ row: ClusterStore.Row, previous: String?, lastOwner: String?, _ store: ClusterStore) async {
        // This instance's earlier run of it (fenced) must be over before the next one writes.
        if let earlier = jobs[row.id] { await earlier.wait() }
        jobs[row.id] = nil
        order.removeAll { $0 == row.id }
        fenced.remove(row.id)
        let roots = config.roots
        do throws(RequestProblem) {
            // The instance that admitted it checked its own allow-list, not this one's.
            if let janus = row.spec.janus, !config.janusAllowed.allows(janus) {
                throw RequestProblem(status: 403, message: "janus: \(janus) is not a Janus this instance may use (--janus-allow)")
            }
            try Self.checkRelay(row.spec, config.relayAllowed)
            try Self.checkToRoom(row.spec, config.janusAllowed)
            let paths = try JobPaths(row.spec, roots: roots)
            reserved[row.id] = paths.claims(roots)
            defer { reserved[row.id] = nil }
            let spec = row.spec
            let prepared = try await OffPool.run { () throws(RequestProblem) in try JobPreparation(spec, paths: paths, roots: roots, fresh: false) }
            await noteFolder(row.id, prepared.outputs, store)
            _ = try launch(id: row.id, spec: paths.canonicalSpec(spec, roots: roots), protection: prepared.protection, media: prepared.media,
                           outputs: prepared.outputs, created: row.created, resumes: row.resumes,
                       startAt: row.spec.kind == .playback ? row.position : nil, pauses: row.status?.pauses,
                       takeover: row.resumes > 0 ? ChainTakeover(cause: previous == nil ? "released" : "failover", from: previous ?? lastOwner, link: row.chainHead) : nil)
        } catch {
            fence.forget(row.id)
            jobSessions[row.id] = nil
            await cannotRun(row, because: error.message, store)
        }
    }

    /// A recording taken here, before its first frame: its folder's identity in its owner row,
    /// and a note in the state directory that this instance holds a folder of it, queued for
    /// upload once the job has ended (JobPublishing+Folders). A failure is logged and the job
    /// runs: recording comes first.
    private func noteFolder(_ id: String, _ outputs: HeldOutputs?, _ store: ClusterStore) async {
        guard let publishing = config.publishing, publishing.storage != nil, let folder = outputs?.folder else { return }
        do {
            let folderID = try await OffPool.run { () throws(RequestProblem) in try FolderMarker.id(of: folder) }
            try await store.setFolder(job: id, folderID: folderID)
            try await publishing.notePart(RecordingPart(job: id, folder: folder.shown.path, folderID: folderID))
        } catch {
            log.error("job \(id): its folder cannot be noted for upload (\(error)); what this instance records of it is not uploaded")
        }
    }

    /// One renewal of every lease held, each job's status published with it.
    private func renew(_ store: ClusterStore) async {
        let ids = fence.held
        guard !ids.isEmpty else { return }
        let sent = ContinuousClock.now
        let answer: (kept: Set<String>, stopAsked: Set<String>)?
        do {
            // A query on a connection whose packets are dropped waits for TCP; the fence does not.
            answer = try await Self.within(clusterOptions.lease) { try await store.renew(ids) }
        } catch {
            answer = nil
            log.warning("cluster: lease renewal failed: \(error)")
        }
        guard let answer else {
            Counter(label: "sfubot_cluster_lease_renewals_missed_total").increment(by: Int64(ids.count))
            return
        }
        for id in ids where fence.deadline(id) != nil {
            if answer.kept.contains(id) { fence.renewed(id, sentAt: sent) } else {
                fence.forget(id)
                stopWriting(id, because: "its lease is no longer this instance's")
            }
        }
        for id in answer.stopAsked { Task { _ = try? await self.stop(id) } }
        for id in answer.kept {
            if let job = jobs[id], job.isActive { try? await store.publish(JobStatus(job), position: job.played?.seconds, chainHead: job.chainHead?.link) }
        }
    }

    private func sessionUp(_ key: Int64) {
        liveSession = key
        log.info("cluster: this instance's database session holds its lock")
    }

    /// This instance's own session ended (or failed): every job claimed under it stops
    /// writing now, before the others may see the session gone and take them.
    private func sessionLost(_ key: Int64, because why: String) {
        if liveSession == key { liveSession = nil }
        // At shutdown the jobs were released first: nothing to say.
        if !Task.isCancelled { Counter(label: "sfubot_cluster_sessions_lost_total").increment() }
        let held = jobSessions.filter { $0.value == key && jobs[$0.key]?.isActive == true && !fenced.contains($0.key) }.map(\.key).sorted()
        if !held.isEmpty { log.error("cluster: this instance's database session ended (\(why)): its \(held.count) job(s) stop writing") }
        for id in held { stopWriting(id, because: "this instance's database session ended") }
    }

    private func fenceDue() {
        for id in fence.due(at: .now) {
            stopWriting(id, because: "its lease was not renewed for \(clusterOptions.lease - clusterOptions.margin)")
        }
    }

    /// Stops a job this instance may no longer write; its outcome is not written (another
    /// instance takes it once the lease has run out or its session is seen gone). A
    /// recording's frames stop here, before its files are finished: no frame of it is written
    /// after this instant.
    private func stopWriting(_ id: String, because why: String) {
        fence.forget(id)
        jobSessions[id] = nil
        guard let job = jobs[id], job.isActive, !fenced.contains(id) else { return }
        fenced.insert(id)
        // A recording writes nothing more, a relay sends nothing more: the next owner does.
        if case .recording(let pauses) = job.pause { pauses.closeGate() }
        if case .relay(let pauses) = job.pause { pauses.closeGate() }
        Counter(label: "sfubot_cluster_jobs_fenced_total").increment()
        log.error("job \(id): stops writing (fenced): \(why)")
        Task { await job.stop() }
    }

    /// `body`, or nil once `limit` has passed. Not a task group: a group would wait for a
    /// query stuck on a connection whose packets are dropped, which cancellation does not end;
    /// that one is cancelled and left to end by itself.
    static func within<T: Sendable>(_ limit: Duration, _ body: @escaping @Sendable () async throws -> T) async throws -> T? {
        let answered = Locked(false)
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T?, any Error>) in
            let finish: @Sendable (Result<T?, any Error>) -> Void = { result in
                let first = answered.withLock { done in
                    defer { done = true }
                    return !done
                }
                if first { continuation.resume(with: result) }
            }
            let work = Task {
                do { finish(.success(try await body())) } catch { finish(.failure(error)) }
            }
            Task {
                try? await Task.sleep(for: limit)
                work.cancel()
                finish(.success(nil))
            }
        }
    }
}
