import Bot
import ECall
import FrameCrypto
import Foundation
import Logging
import Janus

extension Agent {
    /// Invitations may reach only the phones: the calls `GET /call/active` lists are joined too.
    func pollActiveCalls() async {
        guard isRunning, let backend = connections?.backend else { return }
        do {
            for call in try await backend.activeCalls() where calls[call.id] == nil {
                guard let wrapped = call.encryptedAESKey, let room = call.janusRoomId ?? call.roomId else { continue }
                await join(callID: call.id, roomID: room, wrappedKey: wrapped)
            }
        } catch {
            log.warning("could not poll active calls: \(error)")
        }
    }

    /// Joins a call: registers it, learns the key host, tells the backend, starts the bot. A
    /// `call_ended` (or the agent stopping) during one of the awaits ends the session; the join
    /// then gives up instead of starting a bot in a call that has ended.
    func join(callID: Int64, roomID: Int64, wrappedKey: String) async {
        guard isRunning, calls[callID] == nil, !left.contains(callID), let c = connections, (try? config.action) != nil else { return }
        var log = self.log
        log[metadataKey: "call.id"] = "\(callID)"
        let key: CallKey
        do { key = try KeyWrap.unwrap(wrappedKey, with: c.identity).key } catch {
            log.error("invitation to call \(callID): \(error)")
            return
        }
        let session = CallSession(callID: callID, roomID: roomID, key: key, logger: log, keyLog: keyLog)
        calls[callID] = session
        await refreshHost(session)
        guard isJoining(session) else { return gaveUp(session) }
        do { _ = try await c.backend.join(callID: callID) } catch { log.warning("call \(callID): join not acknowledged: \(error)") }
        guard isJoining(session) else { return gaveUp(session) }
        guard startMedia(session, room: roomID, from: .joining) else { return gaveUp(session) }
        counters.callsJoined += 1
        eventSink.yield(callID)
        log.info("joined call \(callID) in room \(roomID)")
    }

    /// How long a call's media tries to come back to Janus by itself before the agent rejoins
    /// the call through the backend.
    static let mediaRejoinTimeout: Duration = .seconds(10)

    /// Starts the call's bot in `room` (first join, or a rejoin) and watches it: an end the agent
    /// did not ask for is a lost call (`mediaEnded`). False if the call left phase `from` meanwhile.
    func startMedia(_ session: CallSession, room: Int64, from phase: CallSession.Phase) -> Bool {
        guard let c = connections, let action = try? config.action else { return false }
        let callID = session.callID, log = session.log
        var bot = BotConfig(janusURL: config.janus, room: room, display: "\(c.me.userId):\(config.displayName)", protection: .e2ee(session.ring),
                            janus: JanusSession.Options(apiSecret: config.janusApiSecret), pipelines: pipelines, logger: log)
        bot.onKeyMissing = { [weak self] _ in Task { await self?.keyMissing(callID: callID) } }
        bot.receivePath = config.receive
        bot.issuedTURN = c.issuedTURN
        bot.fetchIssuedTURN = { [weak self] in
            guard let self else { throw AgentError.backend("the agent stopped") }
            return try await self.freshTURN()
        }
        bot.ice = config.ice
        // Janus's own reconnection (claim, new session) first; past this, the call is rejoined
        // through the backend (request-rejoin), which may move it to another room.
        bot.rejoinTimeout = Self.mediaRejoinTimeout
        let media = self.media
        guard let (run, task) = session.startMedia(from: phase, room: room, { run in media.start(bot, action, callID: callID, segment: run, logger: log) })
        else { return false }
        Task { [weak self] in
            let end = await task.value
            await self?.mediaEnded(session, run: run, end)
        }
        return true
    }

    /// Whether `session` is still the call being joined, after an await of `join`.
    private func isJoining(_ session: CallSession) -> Bool {
        isRunning && calls[session.callID] === session && session.phase == .joining
    }

    /// Whether the agent is still in `session`'s call (joining or joined), after an await.
    func isActive(_ session: CallSession) -> Bool { calls[session.callID] === session }

    private func gaveUp(_ session: CallSession) {
        session.log.info("call \(session.callID) was left while joining it: the bot does not start")
    }

    /// Ends the call for this agent: a joined call's bot stops and its files are finished; a
    /// call still being joined is abandoned by `join`. Counted ended either way.
    func leave(_ callID: Int64, reason: String) async {
        guard let session = calls.removeValue(forKey: callID) else { return }
        left.insert(callID)
        session.log.info("leaving call \(callID): \(reason)")
        let wasJoined = await session.end()
        counters.callsEnded += 1
        if wasJoined { eventSink.yield(-callID) }
    }

    /// The key host (participant with `isHostKey`) and its published device key.
    func refreshHost(_ session: CallSession) async {
        guard let backend = connections?.backend else { return }
        do {
            guard let host = try await backend.participants(callID: session.callID).first(where: { $0.isHostKey == true }),
                  let device = host.deviceId else { return }
            let keys = try await backend.publicKeys(userIDs: [host.userId])
            guard isActive(session) else { return }
            session.host = .init(userID: host.userId, deviceID: device, publicKey: keys["\(host.userId)_\(device)"].flatMap { try? DevicePublicKey(wire: $0) })
        } catch {
            session.log.warning("call \(session.callID): could not learn the key host: \(error)")
        }
    }
}
