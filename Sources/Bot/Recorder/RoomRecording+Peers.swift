import Comeback
import Foundation
import GStreamerKit
import Janus
import Logging
import Synchronization

/// Publishers joining and leaving, and the PeerConnection that carries them: one webrtcbin in
/// the pipeline and its multistream subscription on the current session. A PeerConnection whose
/// negotiation fails is replaced at once (`negotiationFailed`), never left to stop recording.
extension RoomRecording {
    func addLogged(_ list: [RoomPublisher]) async {
        do { try await add(list) } catch is NegotiationReported {
            // Logged, counted and being recovered by `negotiationFailed`.
        } catch { log.error("could not follow the room: \(error)") }
    }

    /// `rejoined`: the publishers were there before the recorder lost Janus (not a new join).
    func add(_ list: [RoomPublisher], rejoined: Bool = false) async throws {
        guard state == .recording else { return }
        let new = list.filter { !$0.streams.isEmpty }
        guard !new.isEmpty else { return }
        presence.seen(new)
        for p in new where !rejoined {
            log.info("publisher \(p.id) '\(p.display)' joined")
            timeline.append(.init(time: Date(), event: "joined", feedID: p.id, display: p.display))
        }
        try await subscribe(new)
        writeManifest()
    }

    /// Subscribes to `list` on the current PeerConnection, or on a new one if there is none;
    /// also while rejoining (the rejoin is back once this worked).
    func subscribe(_ list: [RoomPublisher]) async throws {
        let new = list.filter { !$0.streams.isEmpty }
        guard !new.isEmpty else { return }
        // Built before the first await: a second caller finds it and only adds feeds.
        let peer = try self.peer ?? startPeer()
        // A publisher that left and is back (same feed id) gets branches again.
        branches.admit(new.map(\.id))
        do {
            try await peer.subscription.add(new.map(\.id))
            peer.shortcut.install(on: peer.webrtc, log: log)
        } catch {
            // (Not `catch where`: Swift 6.3.1's SILGen crashes on it with this typed throw.)
            if peer.negotiationFailed.isSet { throw NegotiationReported(error: error) }
            throw error
        }
    }

    func publisherLeft(_ p: RoomPublisher) async {
        // When Janus said so: departures are finished one at a time, and 20 at once take seconds.
        let left = roster?.takeDeparture(of: p.id) ?? Date()
        if state == .recording || state == .rejoining { presence.left(p.id, at: left) }
        guard state == .recording, let media, let peer else { return }
        // Janus drops a departed publisher's streams from the subscription by itself.
        await peer.subscription.forget([p.id])
        log.info("publisher \(p.id) left")
        timeline.append(.init(time: Date(), event: "left", feedID: p.id, display: p.display))
        // What of theirs waits for lip sync (direct path) goes out before the cut; the others'
        // waits end too, their first packets stamped without the offset: late sync, not a loss.
        await peer.webrtc.releaseHeldPackets()
        // Detached and handed to a task the stop waits for (`leaving`), with no suspension in
        // between: a stop that ran while these files were being finished wrote a manifest
        // without them (issue 39: `feeds: []`, "frames received: 0", the tracks not merged).
        let done = branches.detach(feed: p.id)
        let remux = self.remux, key = UUID()
        let work = Task {
            for r in done { await r.finish(in: media.pipeline) }
            return await remux.merge(done.map(\.entry))
        }
        leaving[key] = work
        await hooks.publisherLeaving()
        let entries = await work.value
        // The stop took them (and wrote the last manifest) if the key is gone.
        guard leaving.removeValue(forKey: key) != nil else { return }
        finished += entries
        writeManifest()
        // The merge replaced track files: a checkpoint now, so a kill does not find them named and gone.
        await checkpoint()
    }

    /// The files of leaves still being finished, waited for and taken (by the stop).
    func takeLeaving() async {
        while let (key, work) = leaving.first {
            leaving[key] = nil
            finished += await work.value
        }
    }

    /// The pipeline (once) and a PeerConnection with its subscription on the current session.
    func startPeer() throws -> Peer {
        guard let session else { throw BotError.janus(.disconnected) }
        let media = try self.media ?? startMedia()
        peers += 1
        // The new PeerConnection's pair is read anew (at once, not in 10 s).
        candidatePair = nil
        pairPending = false
        receiveDrops = (receiveDrops.earlier + receiveDrops.current, 0, receiveDrops.read)
        unrepaired = (unrepaired.earlier + unrepaired.current, 0, unrepaired.since, unrepaired.repairedEarlier + unrepaired.repaired, 0)
        let webrtc: WebRTCBin
        if peers == 1 {
            webrtc = try WebRTCBin(media.pipeline.element(named: "webrtc"))
        } else {
            let element = try media.pipeline.addElement(description: config.pipelines.description("subscribe"), name: "webrtc\(peers)")
            webrtc = try WebRTCBin(element)
        }
        try config.configureICE(webrtc)
        let shortcut = ReceiveShortcut(config.receivePath)
        try shortcut.prepare(webrtc)
        let branches = self.branches, pipeline = media.pipeline, mix = media.mix, number = peers, failed = NegotiationFlag()
        webrtc.onIncomingPad { incoming in
            guard let mid = incoming.mid else { return }
            branches.attach(pad: incoming.pad, mid: mid, pipeline: pipeline, mix: mix)
        }
        if peers > 1, !webrtc.element.syncStateWithParent() { throw BotError.pipelineFailed("a new webrtcbin did not start") }
        let subscription = Subscription(
            session: session, room: config.room, privateID: roster?.privateID, webrtc: webrtc, logger: log,
            hooks: .init(streams: { branches.learn($0) }, negotiated: { branches.reattachReused(pipeline: pipeline, mix: mix) },
                         failed: { [weak self] error in
                             failed.set()
                             Task { await self?.negotiationFailed(peer: number, error) }
                         }))
        // Weak: a replaced PeerConnection's subscription (and its webrtcbin) must not live on here.
        branches.keyFrames.route(to: subscription)
        let tlsWatch = config.watchTLSRefusals { [weak self] in await self?.tlsFailed(peer: number, $0) }
        let following = Task { [weak self] in
            defer { tlsWatch.cancel() }
            for await event in subscription.events {
                switch event {
                // A session that ended is the roster's to report (once for both handles).
                case .lost(.sessionEnded): return
                // A refused TURN allocation fails again at once: come back with backoff.
                case .lost(let loss):
                    guard let self else { return }
                    let why = await self.config.explain(loss)
                    if why.isTURNFailure { await self.turnFailed(why) } else { await self.startRejoin(why.description, rejoinSession: false) }
                case .ice(let s) where s == "connected" || s == "completed":
                    await self?.sizeReceiveBuffer(number)
                    await self?.readCandidatePair(now: true)
                case .ice, .connection: break
                }
            }
        }
        let peer = Peer(webrtc: webrtc, subscription: subscription, following: following, started: .now, number: number, negotiationFailed: failed, shortcut: shortcut)
        self.peer = peer
        return peer
    }

    /// Janus's offer could not be answered on PeerConnection `number`: its subscription no
    /// longer matches what Janus sends (feeds added in that offer would never be recorded).
    /// Counted (manifest `errors`, `sfubot_negotiation_failures_total`), logged once, and the
    /// PeerConnection replaced on the same session, with every publisher subscribed again.
    func negotiationFailed(peer number: Int, _ error: BotError) {
        guard state == .recording, peer?.number == number else { return }
        negotiationFailures += 1
        BotMetrics.negotiationFailed()
        let text = "PeerConnection \(number) could not answer Janus's offer (\(error)); replacing it"
        log.error("\(text)")
        branches.note(.init(time: Date(), error: text))
        startRejoin("negotiation failed: \(error)", rejoinSession: false)
    }

    /// Relay only, and the TURN server gave no relay candidate (credentials refused, or it is
    /// unreachable): rejoins after 0.5 s, doubling to 30 s while it keeps failing, so a wrong
    /// password is a few gaps naming TURN, not a PeerConnection torn down every 100 ms.
    func turnFailed(_ why: PeerLoss) {
        let pause = Backoff.turnRefused.delay(afterFailures: turnFailures)
        turnFailures += 1
        startRejoin(why.description, rejoinSession: false, pause: pause, refreshTURN: true)
    }

    /// PeerConnection `number`'s TLS to a `turns:` server failed (its certificate did not verify):
    /// a TURN failure, with backoff, unless that PeerConnection is gone already.
    func tlsFailed(peer number: Int, _ failure: String) {
        guard state == .recording, peer?.number == number else { return }
        turnFailed(.turnFailed(failure))
    }

    /// The media socket's receive buffer, asked when ICE connects. One bundled socket carries every
    /// feed of the room; the kernel's default holds about 40 ms of 20 phones, and a loaded machine
    /// held the reader up longer (bench-record lost frames there: docs/performance.md).
    static let receiveBufferBytes = 4 << 20

    func sizeReceiveBuffer(_ number: Int) async {
        let asked = config.receiveBufferBytes ?? Self.receiveBufferBytes
        guard let webrtc = peer?.webrtc, let held = await webrtc.enlargeReceiveBuffers(to: asked),
              peer?.number == number else { return }
        if held.bytes >= asked {
            log.debug("media socket receive buffer: \(held.bytes >> 10) KiB")
        } else if !receiveBufferCapped {
            receiveBufferCapped = true
            log.warning("the media socket's receive buffer holds \(held.bytes >> 10) KiB, not the \(asked >> 10) KiB asked: net.core.rmem_max caps it without CAP_NET_ADMIN, and a loaded machine may drop packets; raise it (sysctl -w net.core.rmem_max=\(asked))")
        }
    }

    /// The kernel's drop count of the current PeerConnection's socket, every second: counted in
    /// the manifest and `sfubot_receive_drops_total`, and warned about once per PeerConnection.
    func readReceiveDrops() async {
        guard let peer, let drops = await peer.webrtc.receiveDrops(), self.peer?.number == peer.number else { return }
        receiveDrops.read = true
        guard drops > receiveDrops.current else { return }
        if receiveDrops.current == 0 {
            log.warning("the kernel dropped \(drops) packet(s) on the media socket: the recorder did not read them in time (is the machine overloaded?); frames may be missing, receive_drops in the manifest counts them")
        }
        BotMetrics.receiveDrops(drops - receiveDrops.current)
        receiveDrops.current = drops
        await readUnrepaired(peer)
    }

    /// With the kernel dropping packets, what the jitter buffers never got back (a
    /// retransmission may repair a drop): frames missing from the files, a loss (issue 42).
    /// The highest count seen per PeerConnection (a feed's buffer goes when the feed does).
    func readUnrepaired(_ peer: Peer) async {
        guard receiveDrops.current > 0 else { return }
        let lost = await peer.webrtc.jitterBuffersLost()
        guard self.peer?.number == peer.number, lost > unrepaired.current else { return }
        if unrepaired.since == nil {
            unrepaired.since = Date()
            BotMetrics.recordingLoss()
            log.error("\(lost) packet(s) never arrived after the kernel dropped packets on the media socket (not repaired by retransmission): frames are missing from the files")
        }
        unrepaired.current = lost
    }

    /// Packets repaired by retransmission on the current PeerConnection (the highest count seen:
    /// a feed's buffer goes when the feed does), for the manifest's `repaired`.
    func readRepaired() async {
        guard let peer else { return }
        let repaired = await peer.webrtc.jitterBuffersRepaired()
        if self.peer?.number == peer.number, repaired > unrepaired.repaired { unrepaired.repaired = repaired }
    }

    /// Reads the current PeerConnection's selected candidate pair (webrtcbin's stats): once ICE
    /// connects (`now`), every second until the stats hold it (on a loaded machine they may not
    /// yet, and a short recording ended without one), then every 10 s; not while it negotiates
    /// (get-stats queues behind and ahead of the descriptions on webrtcbin's thread). Logged
    /// when it changes, e.g. `relay→host` when media goes through the TURN server.
    func readCandidatePair(now: Bool = false) async {
        candidateReads += 1
        await readReceiveDrops()
        await readRepaired()
        if now { pairPending = true }
        guard pairPending || candidateReads % 10 == 0 else { return }
        guard let webrtc = peer?.webrtc, let pair = try? await webrtc.selectedCandidatePairs().first else { return }
        pairPending = false
        turnFailures = 0
        guard pair != candidatePair else { return }
        candidatePair = pair
        log.info("media over ICE candidate pair \(pair.summary)")
    }
}

/// Set from the subscription's actor when a PeerConnection's negotiation failed, before the
/// error reaches whoever awaited that negotiation: they need not log it again.
final class NegotiationFlag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .sequentiallyConsistent) }
    var isSet: Bool { value.load(ordering: .sequentiallyConsistent) }
}

/// A subscription change that failed in a negotiation `negotiationFailed` already handles.
struct NegotiationReported: Error, CustomStringConvertible {
    let error: any Error
    var description: String { "\(error)" }

}
