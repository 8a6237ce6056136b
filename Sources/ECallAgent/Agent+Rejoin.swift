import Comeback
import ECall
import FrameCrypto
import Foundation
import Logging

/// Getting back into a call whose media was lost (ECALL-WIRE §7, rejoin): `request-rejoin`, the
/// first acceptable `participant_accept_rejoin`, its key into the ring, `rejoin`, new media in
/// the room the backend names. One rejoin per call at a time (the session's `rejoining` phase),
/// none once the call is leaving; every step checks the phase again after its await.
extension Agent {
    /// A call's media run ended. Unless the agent stopped it, the call is lost while still on:
    /// the agent rejoins (or, when rejoining cannot help, leaves it counted lost).
    func mediaEnded(_ session: CallSession, run: Int, _ end: CallMediaEnd) async {
        let cause: String, retryable: Bool
        switch end {
        case .stopped: return
        case .ended: (cause, retryable) = ("the media ended by itself", true)
        case .failed(let why, let canRetry): (cause, retryable) = (why, canRetry)
        }
        let lostAt = ContinuousClock.now
        guard isRunning, isActive(session), let first = session.lost(run: run, policy: rejoinPolicy.comeback, at: lostAt) else { return }
        counters.mediaLost += 1
        guard retryable else {
            return await giveUp(session, lost: cause, after: 0, since: lostAt, last: "rejoining cannot fix this")
        }
        session.log.warning("call \(session.callID): lost the call's media (\(cause)); asking to rejoin")
        session.setRejoin(Task { [weak self] in await self?.rejoin(session, lost: cause, at: lostAt, first: first) })
    }

    /// Whether `session` is still the call being rejoined, after an await.
    private func isRejoining(_ session: CallSession) -> Bool {
        isRunning && isActive(session) && session.phase == .rejoining
    }

    /// The rejoin loop: the shared comeback driver on the call's comeback machine (`first`: what
    /// it said at the loss). Each attempt requests, waits `acceptTimeout` for a key, rejoins and
    /// starts the media; once `attempts` are spent since the media last ran stably the call is
    /// given up. Whenever the call stops rejoining (left, the agent stopping) the loop ends.
    func rejoin(_ session: CallSession, lost cause: String, at started: ContinuousClock.Instant,
                first: CallSession.Comeback.Action) async {
        let policy = rejoinPolicy
        let outcome = await ComebackDriver(clock: ContinuousClock()).run(
            from: first, step: { session.rejoin($0, at: $1) }, stillWanted: { self.isRejoining(session) },
            isWorthRetrying: { _ in true }) { (attempt: Int) async throws(RejoinFailure) in
            try await rejoinOnce(session, attempt: attempt, lost: cause, since: started)
        }
        guard case .gaveUp(let last, let tries) = outcome, isRejoining(session) else { return }
        // No last failure: the attempts were spent before this loss (media that kept failing
        // soon after each rejoin).
        let why = last?.description ?? "the media failed within \(Self.seconds(policy.stableAfter)) of each of \(policy.attempts) rejoins"
        await giveUp(session, lost: cause, after: tries, since: started, last: why)
    }

    /// One rejoin attempt; back in the call when it returns. Whatever ends the rejoin (the call
    /// over, left, the agent stopping) throws too: the driver then finds it no longer wanted.
    private func rejoinOnce(_ session: CallSession, attempt: Int, lost cause: String, since started: ContinuousClock.Instant) async throws(RejoinFailure) {
        let policy = rejoinPolicy, callID = session.callID
        let over = RejoinFailure(description: "no longer rejoining")
        func failed(_ step: String, _ error: any Error) async throws(RejoinFailure) -> Never {
            guard isRejoining(session) else { throw over }
            if Self.callIsOver(error) {
                await leave(callID, reason: "the backend says the call is over (\(error))")
                throw over
            }
            session.log.warning("call \(callID): rejoin attempt \(attempt) of \(policy.attempts): \(step) failed: \(error)")
            throw RejoinFailure(description: "\(step) failed: \(error)")
        }
        guard isRejoining(session), let backend = connections?.backend else { throw over }
        // Open before asking: a participant may answer before the request's reply comes.
        let keys = session.accepts.open()
        do {
            _ = try await backend.requestRejoin(callID: callID)
        } catch {
            session.accepts.close()
            try await failed("request-rejoin", error)
        }
        guard isRejoining(session) else {
            session.accepts.close()
            throw over
        }
        counters.rejoinRequests += 1
        session.log.info("call \(callID): asked to rejoin (attempt \(attempt) of \(policy.attempts)); waiting \(Self.seconds(policy.acceptTimeout)) for a participant's key")
        guard let key = await AcceptWindow.first(of: keys, within: policy.acceptTimeout) else {
            session.accepts.close()
            guard isRejoining(session) else { throw over }
            let why = "no participant_accept_rejoin within \(Self.seconds(policy.acceptTimeout))"
            session.log.warning("call \(callID): rejoin attempt \(attempt) of \(policy.attempts): \(why)")
            throw RejoinFailure(description: why)
        }
        guard isRejoining(session) else { throw over }
        session.ring.setCurrent(key)
        let record: CallRecord
        do { record = try await backend.rejoin(callID: callID) } catch {
            try await failed("rejoin", error)
        }
        guard isRejoining(session) else { throw over }
        let room = record.janusRoomId ?? record.roomId ?? session.room
        // Starting the media tells the call's machine it is back (atomically with the phase).
        guard startMedia(session, room: room, from: .rejoining) else { throw over }
        counters.rejoins += 1
        let took = ContinuousClock.now - started
        session.log.notice("call \(callID): rejoined room \(room) \(Self.seconds(took)) after losing it (\(cause)); attempt \(attempt) of \(policy.attempts)")
    }

    /// The call is lost for good: counted, logged with its cause, left.
    private func giveUp(_ session: CallSession, lost cause: String, after tries: Int, since started: ContinuousClock.Instant, last: String) async {
        counters.rejoinsFailed += 1
        counters.callsLost += 1
        let took = ContinuousClock.now - started
        if tries == 0 {
            session.log.error("call \(session.callID) lost: \(cause) (\(last))")
        } else {
            session.log.error("call \(session.callID) lost: gave up rejoining after \(tries) attempt(s), \(Self.seconds(took)) after losing it (lost: \(cause); last: \(last))")
        }
        await leave(session.callID, reason: "lost, could not rejoin")
    }

    /// A refusal that says the call no longer exists (or this user is no longer in it): rejoining
    /// is pointless.
    static func callIsOver(_ error: any Error) -> Bool {
        guard let e = error as? ECallError, let status = e.status else { return false }
        return status == 404 || status == 403 || status == 410
    }

    /// `participant_accept_rejoin`: taken only when it is addressed to this device (as the apps
    /// check: `participantId` and `calleeDeviceId`), a rejoin waits for it, its key unwraps with
    /// this device's identity, and a participant of the call wrapped it. The apps do not
    /// authenticate the sender key embedded in a P-256 wrapping, so it must be a participant's
    /// published key; an RSA wrapping carries none, so `senderId`/`senderDeviceId` must name a
    /// participant (weaker, as for rotations). Anything else is refused and counted.
    func takeRejoinAccept(_ m: SignalMessage, _ session: CallSession) async {
        guard let c = connections else { return }
        guard m.participantId == c.me.userId, m.calleeDeviceId == c.me.deviceId else {
            let to = "user \(m.participantId.map(String.init) ?? "?") device \(m.calleeDeviceId.map(String.init) ?? "?")"
            return refuseAccept(m, session, "addressed to \(to), not to this device")
        }
        guard session.accepts.isOpen else {
            session.log.debug("call \(session.callID): participant_accept_rejoin while no rejoin request waits: ignored")
            return
        }
        let unwrapped: KeyWrap.Unwrapped
        do { unwrapped = try KeyWrap.unwrap(m.encryptedAESKey ?? "", with: c.identity) } catch {
            return refuseAccept(m, session, "\(error)")
        }
        let sender: Participant?
        do { sender = try await participant(wrapping: unwrapped, m, session, c) } catch {
            return refuseAccept(m, session, "could not check who wrapped it: \(error)")
        }
        guard isActive(session) else { return }
        guard let sender else { return refuseAccept(m, session, "not wrapped by a participant's published key") }
        guard session.accepts.offer(unwrapped.key) else {
            session.log.debug("call \(session.callID): another participant_accept_rejoin came first: ignored")
            return
        }
        session.log.info("call \(session.callID): took the call key from user \(sender.userId) (participant_accept_rejoin)")
    }

    /// The participant (not this device) whose published key wrapped `unwrapped`, if any.
    private func participant(wrapping unwrapped: KeyWrap.Unwrapped, _ m: SignalMessage, _ session: CallSession, _ c: Connections) async throws -> Participant? {
        let others = try await c.backend.participants(callID: session.callID).filter {
            !($0.userId == c.me.userId && $0.deviceId == c.me.deviceId) && $0.status != "left"
        }
        guard let senderKey = unwrapped.sender else {
            return others.first { $0.userId == m.senderId && $0.deviceId == m.senderDeviceId }
        }
        let published = try await c.backend.publicKeys(userIDs: Array(Set(others.map(\.userId))))
        return others.first { p in
            guard let device = p.deviceId, let wire = published["\(p.userId)_\(device)"] else { return false }
            return (try? DevicePublicKey(wire: wire)) == senderKey
        }
    }

    static func seconds(_ d: Duration) -> String {
        String(format: "%.3f s", Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18)
    }

    func refuseAccept(_ m: SignalMessage, _ session: CallSession, _ why: String) {
        counters.rejoinAcceptsRefused += 1
        let from = m.senderId.map { " from user \($0)" } ?? ""
        session.log.warning("call \(session.callID): refused a participant_accept_rejoin\(from): \(why)")
    }
}
