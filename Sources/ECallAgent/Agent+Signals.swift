import ECall
import FrameCrypto
import Foundation
import Logging

extension Agent {
    /// One STOMP message body: counted, parsed, and acted on if it is about a call the agent is in.
    func received(_ body: Data) async {
        counters.signals += 1
        let m: SignalMessage
        do { m = try SignalMessage.parse(body) } catch {
            if case .unknownType = error { counters.unknownSignals += 1 } else { counters.malformedSignals += 1 }
            log.warning("dropped a signal message: \(error)")
            return
        }
        guard let kind = m.kind else { return }
        if kind == .callInvitation {
            if let id = m.callId, let room = m.roomId, let key = m.encryptedAESKey { await join(callID: id, roomID: room, wrappedKey: key) }
            return
        }
        guard let id = m.callId, let session = calls[id] else {
            counters.otherCalls += 1
            log.info("\(m.type) for call \(m.callId.map(String.init) ?? "none"), which the agent is not in: ignored",
                     metadata: m.callId.map { ["call.id": "\($0)"] })
            return
        }
        switch kind {
        case .keyRotation: await takeKey(m, session, rotation: true)
        case .sendAESKey: await takeKey(m, session, rotation: false)
        case .callEnded, .callCancelled: await leave(id, reason: m.type)
        case .handoverHost: await handover(to: m.participantId, session)
        case .participantJoined, .participantLeft, .participantUpdated:
            if !isHost(session) { await refreshHost(session) }
        case .requestAESKey: await answerKeyRequest(m, session)
        case .participantRequestRejoin: await acceptRejoin(m, session)
        case .participantAcceptRejoin: await takeRejoinAccept(m, session)
        default: break
        }
    }

    /// A key from `key_rotation` (applied at its timestamp) or `send_aes_key` (at once), taken
    /// only if the current key host wrapped it: the apps do not authenticate the sender key
    /// embedded in a P-256 wrapping, so it must be the host's published key.
    func takeKey(_ m: SignalMessage, _ session: CallSession, rotation: Bool) async {
        guard let identity = connections?.identity, let wrapped = m.encryptedAESKey else { return }
        if session.host == nil {
            await refreshHost(session)
            guard isActive(session) else { return }
        }
        let unwrapped: KeyWrap.Unwrapped
        do { unwrapped = try KeyWrap.unwrap(wrapped, with: identity) } catch {
            refuse(m, session, "\(error)")
            return
        }
        guard let host = session.host else { return refuse(m, session, "the call's key host is unknown") }
        let fromHost = if let sender = unwrapped.sender { sender == host.publicKey } else { m.senderId == host.userID && m.senderDeviceId == host.deviceID }
        guard fromHost else { return refuse(m, session, "not wrapped by the key host's published key") }
        if rotation {
            let at = m.keyRotationTimestamp ?? Date().timeIntervalSince1970
            session.ring.schedule(unwrapped.key, at: at)
            counters.rotationsApplied += 1
            session.log.info("call \(session.callID): key rotation accepted, current from \(Date(timeIntervalSince1970: at))")
        } else {
            session.ring.setCurrent(unwrapped.key)
            session.keyArrived()
            counters.keysReceived += 1
            session.log.info("call \(session.callID): call key received from the key host")
        }
    }

    func refuse(_ m: SignalMessage, _ session: CallSession, _ why: String) {
        counters.rotationsRefused += 1
        session.log.warning("call \(session.callID): refused \(m.type) from user \(m.senderId.map(String.init) ?? "?"): \(why); the key did not change")
    }

    /// A frame of the call did not open with any key: ask the key host (`request_aes_key`).
    func keyMissing(callID: Int64) async {
        guard let session = calls[callID], let me = connections?.me, let host = session.host, host.userID != me.userId else { return }
        guard session.shouldRequestKey() else { return }
        var m = SignalMessage(type: .requestAESKey)
        m.callId = callID
        m.participantId = host.userID
        m.participantDeviceId = host.deviceID
        m.senderId = me.userId
        m.senderDeviceId = me.deviceId
        await send(m)
        counters.keyRequestsSent += 1
        session.log.info("call \(callID): frames do not open, asked the key host for the call key")
    }

    func send(_ m: SignalMessage) async {
        guard let stomp = connections?.stomp, let token = await connections?.backend.session?.accessToken else { return }
        do {
            try await stomp.send("/exchange/ecall.signal.in", body: m.json, headers: [("content-type", "application/json"), ("authorization", "Bearer \(token)")])
        } catch {
            log.warning("could not send \(m.type): \(error)")
        }
    }
}
