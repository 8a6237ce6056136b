import Bot
import FrameCrypto
import Foundation
import Locking
import Logging

/// Every change kept by the store (and told to `events`); a kept job taken up again.
extension JobManager {
    func persist(_ job: Job) {
        if let events = config.events, !fenced.contains(job.id) {
            var status = JobStatus(job)
            status.owner = store.owner
            events.jobChanged(status, ended: job.outcome != nil)
        }
        store.persist(job, in: self)
    }

    /// A job that ended before this process, listed.
    func remember(_ record: JobStore.Record) {
        let job = Job(id: record.id, spec: record.spec, created: record.created, resumes: record.resumes, live: LiveStatus(), sent: nil)
        if let outcome = record.outcome { job.settle(outcome) }
        jobs[record.id] = job
        order.append(record.id)
    }

    /// A job kept from before this process taken up again (`LocalJobStore.start`): in its folder,
    /// which keeps its files; one that cannot be is failed, saying why.
    func takeUp(_ record: JobStore.Record) async {
        let roots = config.roots
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
