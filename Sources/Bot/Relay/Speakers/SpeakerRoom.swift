import FrameCrypto
import Foundation
import GStreamerKit
import Janus
import Logging
import TextWebSocket

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
    let pauses: RecordingPauses
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
        /// Their feed now: a participant back on a new feed (after their own rejoin) goes on
        /// in the same channel.
        var feed: Int64
        var peer: RelayPeer?
    }

    /// By participant id (`SpeakerChannel.Who.id`).
    var speakers: [String: Speaker] = [:]
    /// How long a participant missing after the relay's own rejoin is waited for (they may be
    /// rejoining too) before their stream says `left`.
    static let absentGrace: Duration = .seconds(15)
    var peers = 0
    /// Listening (`--ws-listen`, SpeakerRoom+Listen.swift): the server, consumers waiting for a
    /// participant not there yet, and the index connections.
    let listen: Bool
    var listener: WebSocketListener?
    var pending: [String: [TextWebSocket]] = [:]
    var indexes: [TextWebSocket] = []

    init(config: BotConfig, destination: SpeakerStreamDestination, audio: SpeakerStreamAudio, participant: String?, status: RelayStatus,
         pauses: RecordingPauses, listen: Bool = false) {
        self.config = config
        self.destination = destination
        self.audio = audio
        self.participant = participant
        self.status = status
        self.pauses = pauses
        self.listen = listen
        log = relayLogger(config)
    }

    func run(for duration: Duration?) async throws(BotError) -> SpeakerRelay.Report {
        if listen { try await startListening() }
        try await followToEnd(for: duration)
        return report
    }

    private func wanted(_ p: RoomPublisher) -> Bool {
        guard p.streams.contains(where: { $0.type == "audio" }) else { return false }
        guard let participant else { return true }
        return String(p.id) == participant || p.userID == participant
    }

    func start() async throws {
        let present = try await joinRoom()
        // Who is missing after a rejoin may be rejoining too: they are waited for a while.
        let absent = speakers.keys.filter { id in !present.contains { Self.id(of: $0) == id } }
        if !absent.isEmpty {
            Task { [weak self] in
                try? await Task.sleep(for: Self.absentGrace)
                await self?.expire(absent)
            }
        }
        status.set(.sending, destination: destination.description)
        if !present.contains(where: wanted) { log.info("in room \(config.room); waiting for \(participant.map { "participant \($0)" } ?? "anyone publishing audio")") }
        try await relay(present)
    }

    func relayLogged(_ list: [RoomPublisher]) async {
        do { try await relay(list, newcomers: true) } catch { log.error("could not subscribe to a speaker: \(error)") }
    }

    /// A channel for each wanted participant that has none, and a PeerConnection for each
    /// channel that has none on this session, or whose participant just joined on a new feed
    /// (`newcomers`: a phone back while Janus has not yet noticed its old feed is gone).
    private func relay(_ list: [RoomPublisher], newcomers: Bool = false) async throws {
        for p in list where wanted(p) {
            let id = Self.id(of: p)
            if speakers[id] == nil { speakers[id] = makeSpeaker(p, id: id) }
            guard var speaker = speakers[id], speaker.peer == nil || (newcomers && speaker.feed != p.id), let session, let roster else { continue }
            if let old = speaker.peer {
                speaker.peer = nil
                await old.close()
                speaker.input.forgetPeer()
            }
            peers += 1
            let peer = try await RelayPeer.make(peers, pipeline: "speaker-subscribe", config: config, session: session, roster: roster,
                                                input: speaker.input, logger: log) { [weak self] number, loss in
                await self?.mediaLost(peer: number, loss)
            }
            (speaker.peer, speaker.feed) = (peer, p.id)
            speakers[id] = speaker
            log.info("speaker stream: participant \(id) on feed \(p.id) '\(p.display)'")
            try await peer.subscription.add([p.id])
        }
    }

    /// The id in the URL and the messages: the ECall user id, else the feed id.
    static func id(of p: RoomPublisher) -> String { p.display.contains(":") ? p.userID : String(p.id) }

    private func makeSpeaker(_ p: RoomPublisher, id: String) -> Speaker {
        let channel = SpeakerChannel(.init(id: id, display: p.displayName), destination: destination, audio: audio, origin: origin,
                                     counts: counts, metrics: metrics, pauses: pauses, status: status, listening: listen, logger: log)
        counts.speakers.increment()
        let branch = audio.isPCM ? "speaker-audio" : "speaker-opus"
        let input = RelayInput(output: channel, branches: .init(audio: branch, audioValues: ["rate": String(audio.sampleRate)], video: false),
                               audioStats: stats, config: config, logger: log)
        // Not a child task: the end must reach it uncancelled, to send `left` and close.
        let task = Task.detached { await channel.run() }
        if listen { arrived(id, display: p.displayName, channel: channel) }
        return Speaker(channel: channel, input: input, task: task, feed: p.id)
    }

    /// Participants still missing `absentGrace` after the relay's rejoin left while it was away.
    private func expire(_ ids: [String]) async {
        for id in ids {
            guard let s = speakers[id], s.peer == nil else { continue }
            speakers[id] = nil
            log.info("participant \(id) did not come back after the relay's rejoin: their speaker stream says left")
            s.channel.leave(left: true)
            announce(.gone(participant: id))
            await s.task.value
        }
    }

    func left(_ p: RoomPublisher) async {
        let id = Self.id(of: p)
        guard let s = speakers[id], s.feed == p.id else { return }
        speakers[id] = nil
        log.info("participant \(p.id) left: their speaker stream says so and closes")
        s.channel.leave(left: true)
        announce(.gone(participant: id))
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
    func finish() async {
        await stopListening()
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
                            bytes: counts.bytes.value, dropped: counts.dropped.value, unsent: counts.unsent.value, paused: counts.paused.value, failures: counts.failures.value,
                            rejoins: status.snapshot.comebacks)
    }
}
