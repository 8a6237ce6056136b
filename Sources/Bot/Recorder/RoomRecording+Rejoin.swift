import Foundation
import GStreamerKit
import Janus
import Logging

/// Coming back after Janus lost the recorder: the session (a WebSocket that could not be
/// claimed back, a Janus restart) or only the media path (ICE failed, no media for
/// `mediaLossTimeout`). Every file is finished at the loss, so nothing recorded before it can be
/// lost; each publisher continues in a new segment file once the recorder is back. The pipeline
/// and the mix go on throughout (the mix hears silence during the gap).
extension RoomRecording {
    /// Janus lost us. `rejoinSession`: the session is gone (new session and roster); otherwise
    /// only the PeerConnection is replaced, on the same session. Runs in a task of its own: the
    /// tasks that notice a loss (the roster's, the peer's) are cancelled by it.
    func startRejoin(_ cause: String, rejoinSession: Bool) {
        guard state == .recording else { return }
        rejoining = Task { await self.lost(cause, rejoinSession: rejoinSession) }
    }

    private func lost(_ cause: String, rejoinSession: Bool) async {
        guard state == .recording else { return }
        state = .rejoining
        // A lost session's outage began when its connection dropped (the claim came later).
        let start = rejoinSession ? await session?.lastConnectionDrop ?? Date() : Date()
        guard state == .rejoining else { return }
        gaps.append(.init(start: start, cause: cause))
        log.warning("lost \(rejoinSession ? "Janus" : "the media path") (\(cause)): the files so far are finished; rejoining within \(config.rejoinTimeout)")
        await finishSegments()
        await dropPeer(announce: !rejoinSession)
        writeManifest()
        guard state == .rejoining else { return }
        if rejoinSession {
            guard await replaceSession(cause: cause) else { return }
            counters.rejoins += 1
            BotMetrics.rejoined()
        } else {
            counters.mediaRestarts += 1
            BotMetrics.mediaRestarted()
        }
        guard state == .rejoining, let roster else { return }
        state = .recording
        if let last = gaps.indices.last {
            gaps[last].close(cause: nil)
            BotMetrics.gap(seconds: gaps[last].seconds ?? 0)
        }
        log.info("back in room \(config.room) after \(String(format: "%.1f", gaps.last?.seconds ?? 0)) s (\(cause))")
        do { try await add(await roster.current, rejoined: true) } catch { log.error("could not subscribe again: \(error)") }
        writeManifest()
    }

    /// A new session and roster, retried until `rejoinTimeout`; false if the recorder gave up
    /// (then `gaveUp` has the reason) or is stopping.
    private func replaceSession(cause: String) async -> Bool {
        following?.cancel()
        await roster?.leave()
        roster = nil
        await readSessionCounters()
        counters.connectionDrops += sessionCounts.drops
        counters.reclaims += sessionCounts.reclaims
        sessionCounts = (0, 0)
        await session?.close()
        session = nil
        var rejoin = Rejoin(config: config, log: log, connect: connect)
        let room = config.room, display = config.display, log = self.log
        do {
            let (session, roster) = try await rejoin.attempt(cause: cause, stillWanted: { await self.state == .rejoining }) {
                (s: JanusSession, _: Int) async throws(BotError) -> RoomRoster in
                try await RoomRoster.join(session: s, room: room, display: display, logger: log)
            }
            self.session = session
            self.roster = roster
            follow(roster)
            return true
        } catch {
            if !error.isStopped { gaveUp.continuation.yield(error) }
            return false
        }
    }

    /// Takes the PeerConnection out of the pipeline (its branches were finished before).
    private func dropPeer(announce: Bool) async {
        guard let peer, let media else { return }
        self.peer = nil
        peer.following.cancel()
        // A pad the old webrtcbin adds while it goes away must not reach the new peer's map.
        peer.webrtc.onIncomingPad { _ in }
        await peer.subscription.leave(announce: announce)
        // The webrtcbin first: its pads must stop pushing before their discard branches go.
        media.pipeline.remove(peer.webrtc.element)
        branches.forgetPeer(pipeline: media.pipeline)
    }

    /// A PeerConnection that had media and has had none for `mediaLossTimeout` lost its path.
    func checkMediaFlow() {
        guard state == .recording, peer != nil, let newest = branches.newestFrame else { return }
        let silent = Date().timeIntervalSince(newest)
        guard silent >= config.mediaLossTimeout.seconds else { return }
        startRejoin("no media for \(String(format: "%.1f", silent)) s", rejoinSession: false)
    }
}

extension Duration {
    /// In seconds, as a Double.
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
