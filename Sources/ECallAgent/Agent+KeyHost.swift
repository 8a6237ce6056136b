import ECall
import FrameCrypto
import Foundation
import Logging

/// The key host's side of ECALL-WIRE §7: handover, rotation every 300 s, answering
/// `request_aes_key`, and every participant's answer to a rejoin request.
extension Agent {
    func isHost(_ session: CallSession) -> Bool {
        guard let me = connections?.me else { return false }
        return session.host?.userID == me.userId
    }

    /// `handover_host`: the participant named is the key host from now on. When it is this
    /// agent, it starts rotating the key.
    func handover(to userID: Int64?, _ session: CallSession) async {
        guard let userID, let c = connections else { return }
        if userID == c.me.userId {
            session.host = .init(userID: c.me.userId, deviceID: c.me.deviceId, publicKey: c.identity.publicKey)
            session.log.info("call \(session.callID): this agent is the key host now")
            session.setRotation(Task { [weak self] in await self?.rotateKeys(session) })
            return
        }
        do {
            guard let p = try await c.backend.participants(callID: session.callID).first(where: { $0.userId == userID }), let device = p.deviceId else { return }
            let key = try await c.backend.publicKeys(userIDs: [userID])["\(userID)_\(device)"]
            guard isActive(session) else { return }
            session.host = .init(userID: userID, deviceID: device, publicKey: key.flatMap { try? DevicePublicKey(wire: $0) })
            session.setRotation(nil)
        } catch {
            session.log.warning("call \(session.callID): could not learn the new key host: \(error)")
        }
    }

    /// The call key wrapped for one participant's device, from its published key.
    func wrapped(_ key: CallKey, for userID: Int64, device: Int64) async -> String? {
        guard let c = connections else { return nil }
        do {
            guard let wire = try await c.backend.publicKeys(userIDs: [userID])["\(userID)_\(device)"] else {
                log.warning("no published key for user \(userID) device \(device)")
                return nil
            }
            return try KeyWrap.wrap(key, for: try DevicePublicKey(wire: wire), from: c.identity)
        } catch {
            log.warning("cannot wrap the call key for user \(userID): \(error)")
            return nil
        }
    }

    /// A message carrying the call key wrapped for one participant's device, from this agent.
    func keyMessage(_ kind: SignalMessage.Kind, _ box: String, to user: Int64, device: Int64, _ session: CallSession, from me: SessionState) -> SignalMessage {
        var m = SignalMessage(type: kind)
        m.callId = session.callID
        m.encryptedAESKey = box
        m.participantId = user
        m.participantDeviceId = device
        m.senderId = me.userId
        m.senderDeviceId = me.deviceId
        return m
    }

    /// As host: `request_aes_key` is answered with `send_aes_key` carrying the current key.
    func answerKeyRequest(_ m: SignalMessage, _ session: CallSession) async {
        guard isHost(session), let me = connections?.me, let user = m.senderId, let device = m.senderDeviceId, let key = session.ring.sealingKey,
              let box = await wrapped(key, for: user, device: device), isActive(session) else { return }
        await send(keyMessage(.sendAESKey, box, to: user, device: device, session, from: me))
        counters.keysSent += 1
        session.log.info("call \(session.callID): sent the call key to user \(user) (request_aes_key)")
    }

    /// Every connected participant answers a rejoin request with the key for the rejoiner: this
    /// agent only while its own media is in the call (as the apps answer only when connected; a
    /// rejoining agent's key may be stale).
    func acceptRejoin(_ m: SignalMessage, _ session: CallSession) async {
        guard session.phase == .joined, let me = connections?.me, let user = m.participantId, let device = m.calleeDeviceId ?? m.participantDeviceId,
              user != me.userId, let key = session.ring.sealingKey, let box = await wrapped(key, for: user, device: device),
              isActive(session), session.phase == .joined else { return }
        var answer = keyMessage(.participantAcceptRejoin, box, to: user, device: device, session, from: me)
        answer.calleeId = user
        answer.calleeDeviceId = device
        await send(answer)
        counters.keysSent += 1
        session.log.info("call \(session.callID): sent the call key to user \(user) device \(device) (participant_request_rejoin)")
    }

    /// As host: a new key every `rotation_seconds` (300), sent to every other participant as
    /// `key_rotation`, current 10 s later for everybody, this agent included.
    func rotateKeys(_ session: CallSession) async {
        let every = Duration.milliseconds(Int64((config.rotationSeconds ?? 300) * 1000))
        while !Task.isCancelled {
            try? await Task.sleep(for: every)
            guard !Task.isCancelled, isActive(session), isHost(session), let c = connections else { return }
            let key = CallKey.random(), at = Date().timeIntervalSince1970 + 10
            do {
                for p in try await c.backend.participants(callID: session.callID) where p.userId != c.me.userId && p.status != "left" {
                    guard let device = p.deviceId, let box = await wrapped(key, for: p.userId, device: device) else { continue }
                    guard isActive(session) else { return }
                    var m = keyMessage(.keyRotation, box, to: p.userId, device: device, session, from: c.me)
                    m.keyRotationTimestamp = at
                    await send(m)
                }
                guard isActive(session) else { return }
                session.ring.schedule(key, at: at)
                counters.rotationsMade += 1
                session.log.info("call \(session.callID): rotated the call key (current from \(Date(timeIntervalSince1970: at)))")
            } catch {
                session.log.warning("call \(session.callID): key rotation failed: \(error)")
            }
        }
    }
}
