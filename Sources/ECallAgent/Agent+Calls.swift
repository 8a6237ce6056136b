import Bot
import ECall
import FrameCrypto
import Foundation
import Logging
import Janus

extension Agent {
    /// Invitations may reach only the phones: the calls `GET /call/active` lists are joined too.
    func pollActiveCalls() async {
        guard let backend = connections?.backend else { return }
        do {
            for call in try await backend.activeCalls() where calls[call.id] == nil {
                guard let wrapped = call.encryptedAESKey, let room = call.janusRoomId ?? call.roomId else { continue }
                await join(callID: call.id, roomID: room, wrappedKey: wrapped)
            }
        } catch {
            log.warning("could not poll active calls: \(error)")
        }
    }

    func join(callID: Int64, roomID: Int64, wrappedKey: String) async {
        guard calls[callID] == nil, !left.contains(callID), let c = connections else { return }
        let key: CallKey
        do { key = try KeyWrap.unwrap(wrappedKey, with: c.identity).key } catch {
            log.error("invitation to call \(callID): \(error)")
            return
        }
        let session = CallSession(callID: callID, roomID: roomID, key: key)
        calls[callID] = session
        await refreshHost(session)
        do { _ = try await c.backend.join(callID: callID) } catch { log.warning("call \(callID): join not acknowledged: \(error)") }
        var bot = BotConfig(janusURL: config.janus, room: roomID, display: "\(c.me.userId):\(config.displayName)", protection: .e2ee(session.ring),
                            janus: JanusSession.Options(apiSecret: config.janusApiSecret), pipelines: pipelines, logger: log)
        bot.onKeyMissing = { [weak self] _ in Task { await self?.keyMissing(callID: callID) } }
        bot.turnServers = c.turnServers
        let action: AgentConfig.InviteAction
        do { action = try config.action } catch { log.error("\(error)"); return }
        session.setMedia(media.start(bot, action, callID: callID, logger: log))
        counters.callsJoined += 1
        eventSink.yield(callID)
        log.info("joined call \(callID) in room \(roomID)")
    }

    func leave(_ callID: Int64, reason: String) async {
        guard let session = calls.removeValue(forKey: callID) else { return }
        left.insert(callID)
        log.info("leaving call \(callID): \(reason)")
        await session.end()
        counters.callsEnded += 1
        eventSink.yield(-callID)
    }

    /// The key host (participant with `isHostKey`) and its published device key.
    func refreshHost(_ session: CallSession) async {
        guard let backend = connections?.backend else { return }
        do {
            guard let host = try await backend.participants(callID: session.callID).first(where: { $0.isHostKey == true }),
                  let device = host.deviceId else { return }
            let keys = try await backend.publicKeys(userIDs: [host.userId])
            session.host = .init(userID: host.userId, deviceID: device, publicKey: keys["\(host.userId)_\(device)"].flatMap { try? DevicePublicKey(wire: $0) })
        } catch {
            log.warning("call \(session.callID): could not learn the key host: \(error)")
        }
    }
}
