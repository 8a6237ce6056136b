import Bot
import FrameCrypto
import Foundation
import Locking
import Logging

/// The state folder: every change saved (off the pool, through `JobStoreWriter`), and the jobs
/// it holds taken up again at start.
extension JobManager {
    func persist(_ job: Job) {
        if let events = config.events, !fenced.contains(job.id) {
            var status = JobStatus(job)
            status.owner = cluster?.instance
            events.jobChanged(status, ended: job.outcome != nil)
        }
        if let cluster { return clusterPersist(job, cluster) }
        store?.save(.init(id: job.id, spec: job.spec, created: job.created, resumes: job.resumes, outcome: job.outcome, pauses: job.pause?.all))
    }

    /// Jobs the state folder holds: ended ones are listed, running ones taken up again.
    func resumeStored() async {
        guard let store else { return }
        let roots = config.roots
        let records = await store.load()
        let running = records.filter { $0.outcome == nil }.count
        if running > config.maxJobs {
            // Admitted before the restart: each is resumed (a recording is never dropped to fit);
            // new requests get 429 until enough of them end.
            log.warning("resuming \(running) job(s), more than --max-jobs \(config.maxJobs): new jobs are refused until they end")
        }
        for record in records where jobs[record.id] == nil {
            if let outcome = record.outcome {
                let job = Job(id: record.id, spec: record.spec, created: record.created, resumes: record.resumes, live: LiveStatus(), sent: nil)
                job.settle(outcome)
                jobs[record.id] = job
                order.append(record.id)
                continue
            }
            do throws(RequestProblem) {
                // Within today's roots, as a new request would be; its folder keeps its files.
                let paths = try JobPaths(record.spec, roots: roots)
                reserved[record.id] = paths.claims(roots)
                defer { reserved[record.id] = nil }
                let spec = record.spec
                let prepared = try await OffPool.run { () throws(RequestProblem) in try JobPreparation(spec, paths: paths, roots: roots, fresh: false) }
                _ = try launch(id: record.id, spec: paths.canonicalSpec(spec, roots: roots), protection: prepared.protection, media: prepared.media, outputs: prepared.outputs,
                               created: record.created, resumes: record.resumes + 1, pauses: record.pauses)
            } catch {
                log.error("job \(record.id) cannot be resumed: \(error.message)")
                let job = Job(id: record.id, spec: record.spec, created: record.created, resumes: record.resumes, live: LiveStatus(), sent: nil)
                finish(job, .init(state: .failed, ended: Date(), error: "not resumed: \(error.message)"))
            }
        }
    }

    func botConfig(for spec: JobSpec, id: String, protection: FrameProtection) -> BotConfig {
        var log = config.logger
        log[metadataKey: "job"] = "\(id)"
        var bot = BotConfig(
            janusURL: spec.janus ?? config.janus, room: spec.room,
            display: spec.display ?? (spec.kind == .recording ? "0:sfubot recorder" : "0:sfubot"),
            protection: protection, janus: config.janusOptions(for: spec.janus ?? config.janus), pipelines: config.pipelines, logger: log)
        bot.rejoinTimeout = config.rejoinTimeout
        bot.ice = config.ice
        return bot
    }
}
