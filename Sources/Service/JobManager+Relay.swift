import Bot
import FrameCrypto
import Foundation

/// Relay jobs (`POST /v1/relays`): one participant of a room, decrypted, out to a destination
/// the operator allowed (`--relay-allow`). What `sfubot relay --to` does, as a job: the same
/// admission, DELETE, webhooks and, with `--database`, failover (the next owner starts the
/// stream again). Only frames that opened leave the process.
extension JobManager {
    /// A relay's destination must be one `--relay-allow` names: the only job whose output
    /// leaves the machine, so nothing unless the operator said so.
    static func checkRelay(_ spec: JobSpec, _ allowed: RelayAllowList) throws(RequestProblem) {
        guard spec.kind == .relay, let to = spec.to else { return }
        guard allowed.allows(to) else {
            let shown = (try? RelayDestination(to))?.description ?? "the destination"
            let allows = allowed.urls.isEmpty ? "none" : allowed.urls.joined(separator: ", ")
            throw RequestProblem(status: 403, message: "to: \(shown) is not a destination this service may send to: the operator allows \(allows) (--relay-allow)")
        }
    }

    func relayJob(id: String, spec: JobSpec, config: BotConfig, created: Date, resumes: Int, duration: Duration?, pause: JobPause,
                  keys: (any IndexedKeying)?) throws(RequestProblem) -> Job {
        guard let to = spec.to, let participant = spec.participant else { throw RequestProblem(status: 500, message: "job \(id): a relay without to or participant") }
        let destination: RelayDestination
        do { destination = try RelayDestination(to) } catch { throw .field("to", error.description) }
        var configured = Relay(config: config, destination: destination, participant: participant, duration: duration)
        if case .relay(let pauses) = pause { configured.pauses = pauses }
        let relay = configured
        let job = Job(id: id, spec: spec, created: created, resumes: resumes, live: LiveStatus(), sent: nil, pause: pause, keys: keys, relay: relay.status)
        let show: @Sendable (String) -> String = { $0.replacingOccurrences(of: to, with: destination.description) }
        job.start { await Self.outcome(of: job, show: show) { () async throws(BotError) in
            let report = try await relay.run()
            // Nothing relayed, or frames that opened and never reached the destination: the
            // job says so (a clean `done` only when the stream got everything).
            if !report.participantSeen { throw .relayIncomplete("participant \(participant) never published in room \(spec.room): nothing was relayed") }
            // Frames opened before the first output was up are its start, not a loss; once the
            // destination has failed, what it missed is.
            if report.failures > 0, report.unsent > 0 {
                throw .relayIncomplete("\(report.unsent) opened frames were not sent while \(destination) was down (\(report.failures) destination failures)")
            }
        } }
        return job
    }
}
