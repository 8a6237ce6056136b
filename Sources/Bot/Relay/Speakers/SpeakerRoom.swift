import FrameCrypto
import Foundation
import GStreamerKit
import Janus
import Logging

/// Speaker streams' state, in one actor: the session and roster it follows and, per
/// participant publishing audio (or the one `--participant` names), a `SpeakerChannel` (the
/// WebSocket connection), a `RelayInput` that opens and decodes their audio into it, and a
/// PeerConnection of its own.
///
/// A channel lives until its participant leaves (`left`, then the close) or the relay ends;
/// a lost Janus session takes the PeerConnections but not the channels: the consumers see a
/// gap, then the same connection goes on (`RoomFollower`).
actor SpeakerRoom: RoomFollower {
    let config: BotConfig
    let destination: SpeakerStreamDestination
    let audio: SpeakerStreamAudio
    /// Only this participant (a feed id or user id); nil: everyone who publishes audio.
    let participant: String?
    let status: RelayStatus
    let log: Logger
    let counts = SpeakerCounts()
    let stats = FrameStats()
    let metrics = RelayMetrics()
    let origin = ContinuousClock.now
    var session: JanusSession?
    var roster: RoomRoster?
    var lostSink: AsyncStream<BotError>.Continuation?

    struct Speaker {
        let channel: SpeakerChannel
        let input: RelayInput
        let task: Task<Void, Never>
        var peer: RelayPeer?
    }

    /// By feed id.
    var speakers: [Int64: Speaker] = [:]
    var peers = 0

    init(config: BotConfig, destination: SpeakerStreamDestination, audio: SpeakerStreamAudio, participant: String?, status: RelayStatus) {
        self.config = config
        self.destination = destination
        self.audio = audio
        self.participant = participant
        self.status = status
        var log = config.logger
        log[metadataKey: "component"] = "relay"
        log[metadataKey: "room"] = "\(config.room)"
        self.log = log
    }

    func run(for duration: Duration?) async throws(BotError) -> SpeakerRelay.Report {
        do {
            try await start()
            status.set(.sending, destination: destination.description)
            try await follow(for: duration)
        } catch is CancellationError {
        } catch {
            let e = BotError(error)
            await Finishing.run { await self.finish() }
            if e.isStopped { return report }
            throw e
        }
        await Finishing.run { await self.finish() }
        return report
    }

    private func wanted(_ p: RoomPublisher) -> Bool {
        guard p.streams.contains(where: { $0.type == "audio" }) else { return false }
        guard let participant else { return true }
        return String(p.id) == participant || p.userID == participant
    }

    func start() async throws {
        let session = try await config.connector(log)
        self.session = session
        let roster = try await RoomRoster.join(session: session, room: config.room, display: config.display, logger: log)
        self.roster = roster
        let present = await roster.current
        // Who left while the relay was away (a rejoin) is told so now.
        for (id, s) in speakers where !present.contains(where: { $0.id == id }) {
            speakers[id] = nil
            s.channel.leave(left: true)
        }
        if !present.contains(where: wanted) { log.info("in room \(config.room); waiting for \(participant.map { "participant \($0)" } ?? "anyone publishing audio")") }
        try await relay(present)
    }

    func relayLogged(_ list: [RoomPublisher]) async {
        do { try await relay(list) } catch { log.error("could not subscribe to a speaker: \(error)") }
    }

    /// A channel for each wanted participant that has none, and a PeerConnection for each
    /// channel that has none on this session.
    private func relay(_ list: [RoomPublisher]) async throws {
        for p in list where wanted(p) {
            if speakers[p.id] == nil { speakers[p.id] = makeSpeaker(p) }
            guard speakers[p.id]?.peer == nil, let session, let roster, let input = speakers[p.id]?.input else { continue }
            peers += 1
            let peer = try await RelayPeer.make(peers, pipeline: "speaker-subscribe", config: config, session: session, roster: roster,
                                                input: input, logger: log) { [weak self] number, loss in
                await self?.mediaLost(peer: number, loss)
            }
            speakers[p.id]?.peer = peer
            log.info("speaker stream: participant \(p.id) '\(p.display)'")
            try await peer.subscription.add([p.id])
        }
    }

    private func makeSpeaker(_ p: RoomPublisher) -> Speaker {
        let who = SpeakerChannel.Who(id: p.display.contains(":") ? p.userID : String(p.id), display: p.displayName)
        let channel = SpeakerChannel(who, destination: destination, audio: audio, origin: origin, counts: counts, metrics: metrics, logger: log)
        counts.speakers.increment()
        let branch = audio.isPCM ? "speaker-audio" : "speaker-opus"
        let input = RelayInput(output: channel, branches: .init(audio: branch, audioValues: ["rate": String(audio.sampleRate)], video: false),
                               audioStats: stats, config: config, logger: log)
        // Not a child task: the end must reach it uncancelled, to send `left` and close.
        let task = Task.detached { await channel.run() }
        return Speaker(channel: channel, input: input, task: task)
    }

    func left(_ p: RoomPublisher) async {
        guard let s = speakers.removeValue(forKey: p.id) else { return }
        log.info("participant \(p.id) left: their speaker stream says so and closes")
        s.channel.leave(left: true)
        await s.peer?.close()
        await s.task.value
    }

    private func mediaLost(peer number: Int, _ loss: PeerLoss) {
        guard speakers.values.contains(where: { $0.peer?.number == number }) else { return }
        lostSink?.yield(.negotiation("the media path to Janus was lost (\(config.explain(loss)))"))
    }

    func cameBack() { status.set(.sending) }

    /// The PeerConnections and the session go; the channels (the consumers' connections) stay.
    func dropSession() async {
        for (id, s) in speakers {
            speakers[id]?.peer = nil
            await s.peer?.close(announce: false)
            s.input.forgetPeer()
        }
        await roster?.leave(announce: false)
        roster = nil
        await session?.close()
        session = nil
    }

    /// Every connection closes (without `left`: the participants did not leave), then the room.
    private func finish() async {
        for s in speakers.values { s.channel.leave(left: false) }
        for s in speakers.values { await s.task.value }
        for s in speakers.values { await s.peer?.subscription.leave() }
        await roster?.leave()
        await session?.close()
        for s in speakers.values { await s.peer?.pipeline.stop() }
        status.set(.done)
    }

    var report: SpeakerRelay.Report {
        SpeakerRelay.Report(audio: stats.snapshot, speakers: counts.speakers.value, connections: counts.connections.value, sent: counts.sent.value,
                            bytes: counts.bytes.value, dropped: counts.dropped.value, unsent: counts.unsent.value, failures: counts.failures.value,
                            rejoins: status.snapshot.comebacks)
    }
}
