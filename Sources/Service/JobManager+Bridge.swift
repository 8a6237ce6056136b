import Bot
import FrameCrypto
import Foundation
import Locking

/// Relay jobs into another room (`toRoom`): what `sfubot relay --to-room` does, as a job. Each
/// participant of the job's room (or the one `participant` names) is published into the other
/// room under their own display, every frame opened with this room's key and sealed again with
/// the other's, never re-encoded. The other room's Janus must be one the operator allows.
extension JobManager {
    func bridgeJob(id: String, spec: JobSpec, toRoom: JobSpec.ToRoom, config: BotConfig, created: Date, resumes: Int,
                   duration: Duration?, pause: JobPause, keys: (any IndexedKeying)?) -> Job {
        var to = config
        to.room = toRoom.room
        if let janus = toRoom.janus { (to.janusURL, to.janus) = (janus, self.config.janusOptions(for: janus)) }
        // Keys are derived per participant, off the pool (PBKDF2 for FrameCryptor and SFrame).
        var configured = Bridge(from: config, to: to, duration: duration) { display throws(BotError) in
            let made = await OffPool.run { () -> Result<FrameProtection, RequestProblem> in
                Result { () throws(RequestProblem) in try JobPreparation.sendingProtection(toRoom, display: display) }
            }
            switch made {
            case .success(let protection): return protection
            case .failure(let problem): throw .output(problem.message)
            }
        }
        configured.only = spec.participant
        // One pause for every participant bridged (their publishers stay in the other room).
        if case .relay(let pauses) = pause { configured.pauses = pauses }
        let bridge = configured
        let job = Job(id: id, spec: spec, created: created, resumes: resumes, live: LiveStatus(), sent: nil, pause: pause, keys: keys, relay: bridge.status)
        job.start { await Self.outcome(of: job, show: { $0 }) { () async throws(BotError) in
            let report = try await bridge.run()
            let who = spec.participant.map { "participant \($0)" } ?? "nobody"
            if report.bridged.isEmpty { throw .relayIncomplete("\(who) published audio in room \(spec.room): nothing was bridged") }
            let failed = report.bridged.filter { $0.error != nil }
            if !failed.isEmpty {
                throw .relayIncomplete(failed.map { "participant \($0.participant) could not be bridged: \($0.error ?? "")" }.joined(separator: "; "))
            }
        } }
        return job
    }
}
