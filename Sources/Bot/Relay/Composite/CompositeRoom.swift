import FrameCrypto
import Foundation
import GStreamerKit
import Janus
import Logging

/// A composite relay's state, in one actor: the session and roster it follows, the mixer (one
/// pipeline, encoded once, into one `RelayOutput`), and per participant publishing a slot in
/// it, a `RelayInput` that opens their frames into the slot and a PeerConnection of their own
/// (webrtcbin 1.22 cannot take Janus's reuse of freed m-lines, so one per participant).
///
/// A slot lives until its participant leaves (the layout closes the gap; the stream goes on);
/// a lost Janus session takes the PeerConnections but not the slots: the composite holds their
/// last pictures and is silent, then they go on in the same slots (`RoomFollower`).
actor CompositeRoom: RoomFollower {
    let config: BotConfig
    let relay: CompositeRelay
    let status: RelayStatus
    let log: Logger
    let audioStats = FrameStats()
    let videoStats = FrameStats()
    var session: JanusSession?
    var roster: RoomRoster?
    var lostSink: AsyncStream<BotError>.Continuation?
    var mixer: CompositeMixer?

    struct Member {
        let slot: CompositeSlot
        let input: RelayInput
        /// Their feed now: a participant back on a new feed goes on in the same slot.
        var feed: Int64
        var peer: RelayPeer?
    }

    /// By participant id (the ECall user id, else the feed id).
    var members: [String: Member] = [:]
    /// Participants whose slot is being made (a pad request off the pool): not made twice.
    var arriving: Set<String> = []
    var participants = 0
    var peers = 0
    /// How long a participant missing after the relay's own rejoin is waited for.
    static let absentGrace: Duration = .seconds(15)

    init(_ relay: CompositeRelay, config: BotConfig) {
        self.relay = relay
        self.config = config
        status = relay.status
        log = relayLogger(config)
    }

    func run(for duration: Duration?) async throws(BotError) -> CompositeRelay.Report {
        let output = RelayOutput(destination: relay.destination, tracks: RelayTracks(audio: true, video: true, pcmAudio: true), library: config.pipelines,
                                 status: status, pauses: relay.pauses, logger: log)
        mixer = try await CompositeMixer.start(format: relay.format, layout: relay.layout, output: output, library: config.pipelines, logger: log)
        try await followToEnd(for: duration)
        return report
    }

    static func id(of p: RoomPublisher) -> String { p.display.contains(":") ? p.userID : String(p.id) }

    func start() async throws {
        let present = try await joinRoom()
        let absent = members.keys.filter { id in !present.contains { Self.id(of: $0) == id } }
        if !absent.isEmpty {
            Task { [weak self] in
                try? await Task.sleep(for: Self.absentGrace)
                await self?.expire(absent)
            }
        }
        if present.allSatisfy({ $0.streams.isEmpty }) { log.info("in room \(config.room); waiting for someone to publish") }
        try await relay(present)
    }

    func relayLogged(_ list: [RoomPublisher]) async {
        do { try await relay(list, newcomers: true) } catch { log.error("could not subscribe to a participant: \(error)") }
    }

    /// A slot for each participant publishing who has none, and a PeerConnection for each slot
    /// that has none on this session, or whose participant just joined on a new feed.
    private func relay(_ list: [RoomPublisher], newcomers: Bool = false) async throws {
        for p in list where !p.streams.isEmpty {
            let id = Self.id(of: p)
            if members[id] == nil {
                guard let mixer, !arriving.contains(id) else { continue }
                arriving.insert(id)
                defer { arriving.remove(id) }
                let slot = try await mixer.add(participant: id, display: p.displayName, video: p.streams.contains { $0.type == "video" })
                let input = RelayInput(output: slot, audioStats: audioStats, videoStats: videoStats, config: config, logger: log)
                members[id] = Member(slot: slot, input: input, feed: p.id)
                participants += 1
            }
            guard var member = members[id], member.peer == nil || (newcomers && member.feed != p.id), let session, let roster else { continue }
            if let old = member.peer {
                member.peer = nil
                await old.close()
                member.input.forgetPeer()
                member.slot.restartVideo()
            }
            peers += 1
            let peer = try await RelayPeer.make(peers, config: config, session: session, roster: roster, input: member.input, logger: log) { [weak self] n, loss in
                await self?.mediaLost(peer: n, loss)
            }
            // They may have left while the PeerConnection was made.
            guard members[id]?.slot === member.slot else {
                await peer.close()
                continue
            }
            (member.peer, member.feed) = (peer, p.id)
            members[id] = member
            log.info("composite: participant \(id) on feed \(p.id) '\(p.display)'")
            try await peer.subscription.add([p.id])
        }
    }

    func left(_ p: RoomPublisher) async {
        let id = Self.id(of: p)
        guard let m = members[id], m.feed == p.id else { return }
        members[id] = nil
        log.info("participant \(p.id) left: their place in the composite goes, the stream goes on")
        await m.peer?.close()
        m.input.forgetPeer()
        await mixer?.remove(m.slot)
    }

    /// Participants still missing `absentGrace` after the relay's rejoin left while it was away.
    private func expire(_ ids: [String]) async {
        for id in ids {
            guard let m = members[id], m.peer == nil else { continue }
            members[id] = nil
            log.info("participant \(id) did not come back after the relay's rejoin: their place in the composite goes")
            await mixer?.remove(m.slot)
        }
    }

    private func mediaLost(peer number: Int, _ loss: PeerLoss) {
        guard members.values.contains(where: { $0.peer?.number == number }) else { return }
        lostSink?.yield(.negotiation("the media path to Janus was lost (\(config.explain(loss)))"))
    }

    func cameBack() { if mixer?.started == true { status.set(.sending) } }

    /// The PeerConnections and the session go; the slots (held pictures) and the output stay.
    func dropSession() async {
        for (id, m) in members {
            members[id]?.peer = nil
            await m.peer?.close(announce: false)
            m.input.forgetPeer()
            m.slot.restartVideo()
        }
        await roster?.leave(announce: false)
        roster = nil
        await session?.close()
        session = nil
    }

    /// Ends the stream (the muxer's end through the sink), leaves and closes everything.
    func finish() async {
        await mixer?.finish()
        for m in members.values { await m.peer?.subscription.leave() }
        await roster?.leave()
        await session?.close()
        for m in members.values { await m.peer?.pipeline.stop() }
        status.set(.done)
    }

    var report: CompositeRelay.Report {
        let counts = mixer?.output.counts
        let pictures = mixer?.losses.picturesMissing() ?? (missing: 0, expected: 0)
        return CompositeRelay.Report(
            audio: audioStats.snapshot, video: videoStats.snapshot, participants: participants,
            audioSent: counts?.audioSent.value ?? 0, videoSent: counts?.videoSent.value ?? 0,
            unsent: counts?.unsent.value ?? 0, beforeKeyFrame: counts?.beforeKeyFrame.value ?? 0, paused: counts?.paused.value ?? 0,
            attempts: counts?.attempts.value ?? 0, failures: counts?.failures.value ?? 0,
            opened: mixer?.started ?? false, speakerChanges: mixer?.speakerChanges ?? 0, rejoins: status.snapshot.comebacks,
            lateAudioMilliseconds: mixer?.losses.lateAudioMilliseconds ?? 0, picturesMissing: pictures.missing, picturesExpected: pictures.expected,
            droppedInOutput: counts?.droppedInOutput.value ?? 0)
    }
}
