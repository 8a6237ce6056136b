import Foundation
import GStreamerKit
import Janus
import Locking
import Logging

/// Coming back after Janus lost the recorder: the session (a WebSocket that could not be
/// claimed back, a Janus restart) or only the media path (ICE failed, no media for
/// `mediaLossTimeout`, a negotiation that failed). Every file is finished at the loss, so nothing
/// recorded before it can be lost; each publisher continues in a new segment file once the
/// recorder is back. The pipeline and the mix go on throughout (the mix hears silence during
/// the gap).
///
/// The recorder is back only once it is subscribed again (Janus answered the subscription and
/// took our answer), whatever the outage: a Janus that does not answer (a stalled host) is
/// tried again, on a new session once the old one failed to serve, until `rejoinTimeout`.
extension RoomRecording {
    /// Janus lost us. `rejoinSession`: the session is gone (new session and roster); otherwise
    /// the PeerConnection is replaced, on the same session while it serves. `since`: when the
    /// outage began, if before now (the newest frame, for media that stopped). Runs in a task of
    /// its own: the tasks that notice a loss (the roster's, the peer's) are cancelled by it.
    /// `pause`: wait this long before coming back (after the files are finished).
    func startRejoin(_ cause: String, rejoinSession: Bool, since: Date? = nil, pause: Duration = .zero) {
        guard state == .recording else { return }
        rejoining = Task { await self.lost(cause, rejoinSession: rejoinSession, since: since, pause: pause) }
    }

    private func lost(_ cause: String, rejoinSession: Bool, since: Date?, pause: Duration) async {
        guard state == .recording else { return }
        state = .rejoining
        // A lost session's outage began when its connection dropped (the claim came later).
        let start = rejoinSession ? await session?.lastConnectionDrop ?? Date() : min(since ?? Date(), Date())
        guard state == .rejoining else { return }
        gaps.append(.init(start: start, cause: cause))
        log.warning("lost \(rejoinSession ? "Janus" : "the media path") (\(cause)): the files so far are finished; rejoining within \(config.rejoinTimeout)")
        await finishSegments()
        await dropPeer(announce: !rejoinSession)
        writeManifest()
        if pause > .zero { try? await Task.sleep(for: pause) }
        guard state == .rejoining, let onNewSession = await comeBack(cause: cause, newSession: rejoinSession) else { return }
        if onNewSession {
            counters.rejoins += 1
            BotMetrics.rejoined()
        } else {
            counters.mediaRestarts += 1
            BotMetrics.mediaRestarted()
        }
        state = .recording
        if let last = gaps.indices.last {
            gaps[last].close(cause: nil)
            BotMetrics.gap(seconds: gaps[last].seconds ?? 0)
        }
        log.info("back in room \(config.room) after \(String(format: "%.1f", gaps.last?.seconds ?? 0)) s (\(cause))")
        // Publishers who joined while the recorder was subscribing (their join was not followed).
        if let roster { await addLogged(await roster.current) }
        writeManifest()
    }

    /// Subscribes to the room's publishers again until it works: on the current session first
    /// (unless `newSession`), on new sessions once one failed to serve (Janus did not answer,
    /// refused, or the session ended), with backoff, until `rejoinTimeout` after the loss.
    /// Returns whether the recorder is back on a new session; nil if it gave up (then `gaveUp`
    /// has the reason) or is stopping.
    private func comeBack(cause: String, newSession: Bool) async -> Bool? {
        let deadline = ContinuousClock.now + config.rejoinTimeout
        var onNewSession = false, attempt = 0
        var backoff = Backoff()
        while state == .rejoining {
            attempt += 1
            if newSession || onNewSession || attempt > 1 {
                guard await replaceSession(cause: cause, until: deadline) else { return nil }
                onNewSession = true
            }
            guard state == .rejoining, let roster else { return nil }
            do {
                let list = await roster.current
                // Who left or joined while the recorder was away.
                presence.current(list)
                try await subscribe(list)
                guard state == .rejoining else { return nil }
                return onNewSession
            } catch {
                guard state == .rejoining else { return nil }
                await dropPeer(announce: false)
                guard ContinuousClock.now < deadline else {
                    log.error("could not subscribe again within \(config.rejoinTimeout) after \(cause) (\(attempt) attempts): \(error)")
                    gaveUp.continuation.yield(BotError(error))
                    return nil
                }
                log.warning("could not subscribe again (attempt \(attempt)): \(error); trying on a new session")
                if attempt > 1 { try? await Task.sleep(for: min(backoff.nextDelay(), deadline - .now)) }
            }
        }
        return nil
    }

    /// A new session and roster, retried until `deadline`; false if the recorder gave up
    /// (then `gaveUp` has the reason) or is stopping. The old session is let go in the
    /// background: a Janus that does not answer would hold each request for its timeout.
    private func replaceSession(cause: String, until deadline: ContinuousClock.Instant) async -> Bool {
        following?.cancel()
        await readSessionCounters()
        counters.connectionDrops += sessionCounts.drops
        counters.reclaims += sessionCounts.reclaims
        sessionCounts = (0, 0)
        let oldRoster = roster, oldSession = session
        roster = nil
        session = nil
        Task {
            await oldRoster?.leave(announce: false)
            await oldSession?.close()
        }
        var rejoin = Rejoin(config: config, log: log, connect: connect, deadline: deadline)
        let room = config.room, display = config.display, log = self.log, hook = hooks.rejoinStillWanted
        do {
            let (session, roster) = try await rejoin.attempt(cause: cause, stillWanted: {
                let wanted = await self.state == .rejoining
                await hook()
                return wanted
            }) {
                (s: JanusSession, _: Int) async throws(BotError) -> RoomRoster in
                try await RoomRoster.join(session: s, room: room, display: display, logger: log)
            }
            // `finish()` may have run since `stillWanted` said yes (before the hop back here): it
            // found no session to close, so this one would stay in the room (a ghost publisher).
            // Destroying the session takes its handle out of the room.
            guard state == .rejoining else {
                await roster.leave(announce: false)
                await session.close()
                return false
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

    /// Takes the PeerConnection out of the pipeline (its branches were finished before). Its
    /// handle is detached in the background (with `announce`): a Janus that does not answer
    /// would hold the rejoin for a request timeout.
    /// Runs while `rejoining`, which keeps `add` from starting a new peer during its await.
    private func dropPeer(announce: Bool) async {
        guard let peer, let media else { return }
        self.peer = nil
        peer.following.cancel()
        // A pad the old webrtcbin adds while it goes away must not reach the new peer's map.
        peer.webrtc.onIncomingPad { _ in }
        Task { await peer.subscription.leave(announce: announce) }
        // The webrtcbin first: its pads must stop pushing before their discard branches go. Off
        // the pool: its teardown joins streaming threads.
        let branches = self.branches
        await OffPool.run {
            media.pipeline.remove(peer.webrtc.element)
            branches.forgetPeer(pipeline: media.pipeline)
        }
    }

    /// A PeerConnection that had media and has had none for `mediaLossTimeout` lost its path;
    /// the outage began at its newest frame.
    func checkMediaFlow() {
        guard state == .recording, peer != nil, let newest = branches.newestFrame else { return }
        let silent = Date().timeIntervalSince(newest)
        guard silent >= config.mediaLossTimeout.seconds else { return }
        startRejoin("no media for \(String(format: "%.1f", silent)) s", rejoinSession: false, since: newest)
    }
}

extension Duration {
    /// In seconds, as a Double.
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
