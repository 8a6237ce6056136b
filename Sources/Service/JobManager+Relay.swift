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
    /// A bridge's other room is on a Janus the operator allows (`--janus`, `--janus-allow`), as
    /// a job's own room is.
    static func checkToRoom(_ spec: JobSpec, _ allowed: JanusAllowList) throws(RequestProblem) {
        guard let janus = spec.toRoom?.janus, !allowed.allows(janus) else { return }
        throw RequestProblem(status: 403, message: "toRoom.janus: \(janus) is not a Janus this service may use: the operator allows \(allowed.urls.joined(separator: ", ")) (--janus-allow)")
    }

    static func checkRelay(_ spec: JobSpec, _ allowed: RelayAllowList) throws(RequestProblem) {
        // A source is read by this machine (an address the operator may not want it to reach,
        // and media the call did not invite): allowed as destinations are.
        if spec.kind == .relay, let from = spec.from {
            guard allowed.allows(from) else {
                let shown = (try? LiveSourceAddress(from))?.description ?? "the source"
                let allows = allowed.urls.isEmpty ? "none" : allowed.urls.joined(separator: ", ")
                throw RequestProblem(status: 403, message: "from: \(shown) is not a source this service may read: the operator allows \(allows) (--relay-allow)")
            }
            return
        }
        guard spec.kind == .relay, let to = spec.to else { return }
        guard allowed.allows(to) else {
            let shown = (try? RelayTarget(to))?.description ?? "the destination"
            let allows = allowed.urls.isEmpty ? "none" : allowed.urls.joined(separator: ", ")
            throw RequestProblem(status: 403, message: "to: \(shown) is not a destination this service may send to: the operator allows \(allows) (--relay-allow)")
        }
    }

    func relayJob(id: String, spec: JobSpec, config: BotConfig, created: Date, resumes: Int, duration: Duration?, pause: JobPause,
                  keys: (any IndexedKeying)?) throws(RequestProblem) -> Job {
        if let toRoom = spec.toRoom {
            return bridgeJob(id: id, spec: spec, toRoom: toRoom, config: config, created: created, resumes: resumes, duration: duration, pause: pause, keys: keys)
        }
        if let from = spec.from {
            return try liveSourceJob(id: id, spec: spec, from: from, config: config, created: created, resumes: resumes, duration: duration, pause: pause, keys: keys)
        }
        guard let to = spec.to else { throw RequestProblem(status: 500, message: "job \(id): a relay without to") }
        let target: RelayTarget
        do { target = try RelayTarget(to) } catch { throw .field("to", error.description) }
        let destination: RelayDestination
        switch target {
        case .speakers(let speakers):
            return speakerJob(id: id, spec: spec, to: speakers, config: config, created: created, resumes: resumes, duration: duration, pause: pause, keys: keys)
        case .destination(let d): destination = d
        }
        guard let participant = spec.participant else {
            return try compositeJob(id: id, spec: spec, destination: destination, config: config, created: created, resumes: resumes,
                                    duration: duration, pause: pause, keys: keys)
        }
        var configured = Relay(config: config, destination: destination, participant: participant, duration: duration)
        if case .relay(let pauses) = pause { configured.pauses = pauses }
        let relay = configured
        return startRelay(id, spec, created: created, resumes: resumes, pause: pause, keys: keys, status: relay.status, shown: destination.description) {
            () async throws(BotError) in
            let report = try await relay.run()
            // Nothing relayed, or frames that opened and never reached the destination: the
            // job says so (a clean `done` only when the stream got everything).
            if !report.participantSeen { throw .relayIncomplete("participant \(participant) never published in room \(spec.room): nothing was relayed") }
            if let lost = report.incomplete { throw .relayIncomplete("to \(destination): \(lost)") }
        }
    }

    /// A relay out's job around `run`: its status shown by GET, errors naming the destination
    /// without its secret parts (`shown`), never as the request wrote it.
    private func startRelay(_ id: String, _ spec: JobSpec, created: Date, resumes: Int, pause: JobPause, keys: (any IndexedKeying)?, status: RelayStatus,
                            shown: String, _ run: @escaping @Sendable () async throws(BotError) -> Void) -> Job {
        let job = Job(id: id, spec: spec, created: created, resumes: resumes, live: LiveStatus(), sent: nil, pause: pause, keys: keys, relay: status)
        let to = spec.to ?? ""
        job.start { await Self.outcome(of: job, show: { $0.replacingOccurrences(of: to, with: shown) }, run) }
        return job
    }

    /// The whole room in one picture (`sfubot relay --to` without `--participant`): `layout`,
    /// everyone's audio mixed, encoded once.
    private func compositeJob(id: String, spec: JobSpec, destination: RelayDestination, config: BotConfig, created: Date, resumes: Int,
                              duration: Duration?, pause: JobPause, keys: (any IndexedKeying)?) throws(RequestProblem) -> Job {
        let format: CompositeFormat
        do { format = try spec.size.map { s throws(BotError) in try CompositeFormat(size: s) } ?? CompositeFormat() } catch { throw .field("size", "\(error)") }
        var configured = CompositeRelay(config: config, destination: destination, layout: CompositeLayout(rawValue: spec.layout ?? "grid") ?? .grid,
                                        format: format, duration: duration)
        if case .relay(let pauses) = pause { configured.pauses = pauses }
        let relay = configured
        return startRelay(id, spec, created: created, resumes: resumes, pause: pause, keys: keys, status: relay.status, shown: destination.description) {
            () async throws(BotError) in
            let report = try await relay.run()
            if report.participants == 0 { throw .relayIncomplete("nobody published in room \(spec.room): nothing was relayed") }
            if !report.opened { throw .relayIncomplete("no frame opened (a wrong key?): nothing was sent to \(destination)") }
            if let lost = report.incomplete { throw .relayIncomplete("to \(destination): \(lost)") }
        }
    }

    /// A live source into the room (`from`), as `sfubot relay --from` does: one publisher, every
    /// frame sealed; a source that drops and comes back goes on in the same publisher.
    private func liveSourceJob(id: String, spec: JobSpec, from: String, config: BotConfig, created: Date, resumes: Int, duration: Duration?,
                               pause: JobPause, keys: (any IndexedKeying)?) throws(RequestProblem) -> Job {
        let address: LiveSourceAddress
        do { address = try LiveSourceAddress(from) } catch { throw .field("from", error.description) }
        var configured = Player(config: config, source: .live(address), duration: duration)
        if case .playback(let pauses) = pause { configured.pauses = pauses }
        let player = configured
        let job = Job(id: id, spec: spec, created: created, resumes: resumes, live: player.status, sent: (player.stats, player.videoStats),
                      pause: pause, keys: keys)
        let show: @Sendable (String) -> String = { $0.replacingOccurrences(of: from, with: address.description) }
        job.start { await Self.outcome(of: job, show: show) { () async throws(BotError) in
            _ = try await player.run()
        } }
        return job
    }

    /// A speaker-stream job (`to` is ws:// or wss://): each participant's audio (or the one
    /// `participant` names) on a connection of its own, as `sfubot relay --to ws://` does.
    private func speakerJob(id: String, spec: JobSpec, to destination: SpeakerStreamDestination, config: BotConfig, created: Date, resumes: Int,
                            duration: Duration?, pause: JobPause, keys: (any IndexedKeying)?) -> Job {
        var configured = SpeakerRelay(config: config, destination: destination, participant: spec.participant, duration: duration)
        if case .relay(let pauses) = pause { configured.pauses = pauses }
        let relay = configured
        return startRelay(id, spec, created: created, resumes: resumes, pause: pause, keys: keys, status: relay.status, shown: destination.description) {
            () async throws(BotError) in
            let report = try await relay.run()
            if report.speakers == 0 {
                let who = spec.participant.map { "participant \($0) never published audio" } ?? "nobody published audio"
                throw .relayIncomplete("\(who) in room \(spec.room): no speaker stream was opened")
            }
            // Decoded audio a consumer never got: its transcript has a hole.
            // (Audio decoded before a first connection was up is its start, as for a destination.)
            if report.dropped > 0 || (report.failures > 0 && report.unsent > 0) {
                throw .relayIncomplete("\(report.dropped + report.unsent) audio messages were not delivered (\(report.dropped) dropped for a slow consumer, \(report.unsent) while a connection was down)")
            }
        }
    }
}
