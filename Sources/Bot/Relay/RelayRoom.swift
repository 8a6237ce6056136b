import FrameCrypto
import Foundation
import GStreamerKit
import Janus
import Locking
import Logging

/// A relay's state, in one actor: the session and roster it follows, the participant's feed(s),
/// the pipeline with its one PeerConnection and subscription, and the output.
///
/// The output is made when the participant is first seen (its tracks decide the output graph)
/// and lives until the end; the participant leaving and coming back (a new feed, the same user
/// id) gets a new PeerConnection and goes on into the same output.
actor RelayRoom {
    let config: BotConfig
    let target: Target
    let participant: String
    let status: RelayStatus
    let pauses: RecordingPauses
    let log: Logger
    var session: JanusSession?
    var roster: RoomRoster?
    /// The PeerConnection of the participant's current feed.
    var peer: RelayPeer?
    var peers = 0
    var output: RelayOutput?
    var outputTask: Task<Void, Never>?
    var input: RelayInput?
    /// The participant's feeds subscribed now.
    var feeds: Set<Int64> = []
    /// Where the current PeerConnection's media loss is told (RelayRoom+Rejoin makes one per
    /// session followed).
    var lostSink: AsyncStream<BotError>.Continuation?

    /// Where the opened frames go.
    enum Target: Sendable, CustomStringConvertible {
        /// A live destination, through a `RelayOutput` made when the participant is first seen.
        case destination(RelayDestination)
        /// Another room's publisher (`RoomInput`): the frames as they opened, told the
        /// participant's tracks first.
        case sink(any RelayFrameSink, tracks: @Sendable (RelayTracks) -> Void)

        var description: String {
            switch self {
            case .destination(let d): d.description
            case .sink: "another room"
            }
        }
    }

    init(config: BotConfig, target: Target, participant: String, status: RelayStatus, pauses: RecordingPauses) {
        self.config = config
        self.pauses = pauses
        self.target = target
        self.participant = participant
        self.status = status
        log = relayLogger(config)
    }

    func run(for duration: Duration?) async throws(BotError) -> Relay.Report {
        try await followToEnd(for: duration)
        return report
    }

    private func matches(_ p: RoomPublisher) -> Bool {
        !p.streams.isEmpty && (String(p.id) == participant || p.userID == participant)
    }

    func start() async throws {
        let present = try await joinRoom()
        if !present.contains(where: matches) { log.info("in room \(config.room); waiting for participant \(participant)") }
        try await relay(present)
    }

    func relayLogged(_ list: [RoomPublisher]) async {
        do { try await relay(list, newcomers: true) } catch { log.error("could not subscribe to participant \(participant): \(error)") }
    }

    /// Subscribes to the participant if `list` holds them and none of their feeds is relayed
    /// now; the first time also makes the output. `newcomers`: `list` just joined, so a feed of
    /// the participant in it is newer than the one relayed: a phone that crashed and came back
    /// while Janus has not yet noticed its old feed is gone. The new feed wins.
    private func relay(_ list: [RoomPublisher], newcomers: Bool = false) async throws {
        guard let p = list.last(where: matches), !feeds.contains(p.id) else { return }
        if !feeds.isEmpty {
            guard newcomers else { return }
            log.info("participant \(participant) is back on feed \(p.id) while feed \(feeds.sorted()) lingers: relaying the new one")
            await dropPeer()
        }
        if input == nil { makeOutput(for: p) }
        let peer = try await existingOrNewPeer()
        feeds.insert(p.id)
        log.info("relaying participant \(p.id) '\(p.display)' to \(target)")
        try await peer.subscription.add([p.id])
    }

    /// The participant left: their PeerConnection goes (a new one is made when they come back:
    /// webrtcbin 1.22 cannot take Janus's reuse of the freed m-lines), the output stays.
    func left(_ p: RoomPublisher) async {
        guard feeds.contains(p.id) else { return }
        log.info("participant \(p.id) left; the stream stays open until they come back or the relay ends")
        await dropPeer()
    }

    private func dropPeer() async {
        feeds = []
        guard let peer else { return }
        self.peer = nil
        await peer.close()
        input?.forgetPeer()
    }

    /// The output (its tracks are the participant's) and the input that feeds it, once.
    private func makeOutput(for p: RoomPublisher) {
        let tracks = RelayTracks(audio: p.streams.contains { $0.type == "audio" }, video: p.streams.contains { $0.type == "video" })
        switch target {
        case .destination(let destination):
            let output = RelayOutput(destination: destination, tracks: tracks, library: config.pipelines, status: status, pauses: pauses, logger: log)
            (self.output, self.input) = (output, RelayInput(output: output, config: config, logger: log))
            // Not a child task: the stop must reach it uncancelled, to end the stream cleanly.
            outputTask = Task.detached { await output.run() }
        case .sink(let sink, let told):
            told(tracks)
            input = RelayInput(output: sink, config: config, logger: log)
        }
    }

    /// A pipeline with one PeerConnection and its subscription, for one feed of the participant.
    private func makePeer() async throws -> RelayPeer {
        guard let session, let roster, let input else { throw BotError.janus(.disconnected) }
        peers += 1
        let peer = try await RelayPeer.make(peers, config: config, session: session, roster: roster, input: input, logger: log) { [weak self] number, loss in
            await self?.mediaLost(peer: number, loss)
        }
        self.peer = peer
        return peer
    }

    private func existingOrNewPeer() async throws -> RelayPeer {
        if let peer { return peer }
        return try await makePeer()
    }

    private func mediaLost(peer number: Int, _ loss: PeerLoss) {
        guard peer?.number == number else { return }
        lostSink?.yield(.negotiation("the media path to Janus was lost (\(config.explain(loss)))"))
    }

    /// Ends the stream (the muxer's end through the sink), leaves and closes everything.
    func finish() async {
        output?.stop()
        await outputTask?.value
        await peer?.subscription.leave()
        await roster?.leave()
        await session?.close()
        await peer?.pipeline.stop()
        status.set(.done)
    }

    var report: Relay.Report {
        let counts = output?.counts
        return Relay.Report(
            audio: input?.audio.snapshot ?? .zero, video: input?.video.snapshot ?? .zero,
            audioSent: counts?.audioSent.value ?? 0, videoSent: counts?.videoSent.value ?? 0,
            unsent: counts?.unsent.value ?? 0, beforeKeyFrame: counts?.beforeKeyFrame.value ?? 0, paused: counts?.paused.value ?? 0,
            attempts: counts?.attempts.value ?? 0, failures: counts?.failures.value ?? 0,
            participantSeen: input != nil, rejoins: status.snapshot.comebacks, outputDelay: output?.delays.summary,
            droppedInOutput: counts?.droppedInOutput.value ?? 0)
    }
}
