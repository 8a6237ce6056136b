import Comeback
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
    /// `pause`: wait this long before coming back (after the files are finished). `refreshTURN`:
    /// the TURN server refused us: fetch its credentials again first (`BotConfig.refreshedTURN`).
    func startRejoin(_ cause: String, rejoinSession: Bool, since: Date? = nil, pause: Duration = .zero, refreshTURN: Bool = false) {
        guard state == .recording else { return }
        rejoining = Task { await self.lost(cause, rejoinSession: rejoinSession, since: since, pause: pause, refreshTURN: refreshTURN) }
    }

    private func lost(_ cause: String, rejoinSession: Bool, since: Date?, pause: Duration, refreshTURN: Bool) async {
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
        if refreshTURN {
            // Never the same refused credentials again when they can be fetched anew.
            let (next, outcome) = await config.refreshedTURN()
            if !outcome.notes.isEmpty {
                config = next
                log.warning("TURN credentials: \(outcome.notes.joined(separator: "; "))\(outcome.changed ? "" : " (unchanged: the TURN server may refuse them again)")")
            }
        }
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
    /// (unless `newSession`), on a new session and roster once one failed to serve (Janus did
    /// not answer, refused, or the session ended), with backoff, until `rejoinTimeout` after the
    /// loss: one comeback machine on the shared driver, each attempt one session (if needed)
    /// and one subscription. Returns whether the recorder is back on a new session; nil if it
    /// gave up (then `gaveUp` has the reason) or is stopping.
    private func comeBack(cause: String, newSession: Bool) async -> Bool? {
        let clock = ContinuousClock()
        var machine = ComebackMachine<ContinuousClock.Instant, Rejoin.Failed>(ComebackPolicy(deadline: config.rejoinTimeout))
        let first = machine.handle(.lost(), at: clock.now)
        var needsSession = newSession, onNewSession = false
        let stillWanted = self.stillWanted
        let outcome = await machine.run(from: first, on: clock, stillWanted: stillWanted, isWorthRetrying: \.retryable) {
            (n: Int) async throws(Rejoin.Failed) in
            let stopped = Rejoin.Failed(error: .stopped, retryable: false)
            if needsSession {
                try await replaceSession(attempt: n, stillWanted: stillWanted)
                (needsSession, onNewSession) = (false, true)
            }
            guard state == .rejoining, let roster else { throw stopped }
            do {
                let list = await roster.current
                // Who left or joined while the recorder was away.
                presence.current(list)
                try await subscribe(list)
            } catch {
                guard state == .rejoining else { throw stopped }
                await dropPeer(announce: false)
                needsSession = true
                log.warning("could not subscribe again (attempt \(n)): \(error); trying on a new session")
                throw Rejoin.Failed(error: BotError(error), retryable: true)
            }
            guard state == .rejoining else { throw stopped }
        }
        switch outcome {
        case .back: return onNewSession
        case .stopped: return nil
        case .gaveUp(let last, let attempts):
            let error = last?.error ?? .janus(.disconnected)
            guard !error.isStopped else { return nil }
            log.error("could not come back within \(config.rejoinTimeout) after \(cause) (\(attempts) attempts): \(error)")
            gaveUp.continuation.yield(error)
            return nil
        }
    }

    /// Whether the comeback still runs (the hook lets a test hold it there).
    private var stillWanted: @Sendable () async -> Bool {
        let hook = hooks.rejoinStillWanted
        return {
            let wanted = await self.state == .rejoining
            await hook()
            return wanted
        }
    }

    /// One new session and roster (`Rejoin.once`). The old ones are let go in the background: a
    /// Janus that does not answer would hold each request for its timeout.
    private func replaceSession(attempt n: Int, stillWanted: @Sendable () async -> Bool) async throws(Rejoin.Failed) {
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
        let room = config.room, display = config.display, log = self.log
        let (session, roster) = try await Rejoin.once(attempt: n, connect: connect, log: log, stillWanted: stillWanted) {
            (s: JanusSession, _: Int) async throws(BotError) -> RoomRoster in
            try await RoomRoster.join(session: s, room: room, display: display, logger: log)
        }
        // `finish()` may have run since `stillWanted` said yes (before the hop back here): it
        // found no session to close, so this one would stay in the room (a ghost publisher).
        // Destroying the session takes its handle out of the room.
        guard state == .rejoining else {
            await roster.leave(announce: false)
            await session.close()
            throw Rejoin.Failed(error: .stopped, retryable: false)
        }
        self.session = session
        self.roster = roster
        follow(roster)
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
}

extension Duration {
    /// In seconds, as a Double.
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
