import Bot
import ECall
import ECallAgent
import ECallStandIn
import FrameCrypto
import Foundation
import Logging
import Synchronization
import Testing
import Proof
import TestSupport
import Locking

/// The call key through the key host: an agent with a stale key asks the host once and records
/// again, and the agent as key host rotates and hands a stale participant the key. On both
/// receive paths no frame is lost meanwhile: those that failed before the key came are held and
/// opened with it (`KeyHold`); on the direct path a stream's first second arrives at once, so
/// before holds 74 frames failed there (webrtcbin: 1–25).
extension MediaScene.AgentTests {
    @Test(arguments: ReceivePath.allCases)
    func anAgentWithAStaleKeyAsksTheHostOnceAndRecordsAgain(path: ReceivePath) async throws {
        let dir = try Scene.tempDirectory("agent-stale-\(path.rawValue)")
        try await Broker.withBackend { backend, api in
            try DeviceIdentity.generate(.p256).write(toNewFile: dir.appendingPathComponent("identity.key").path)
            let configFile = dir.appendingPathComponent("agent.json")
            try JSONSerialization.data(withJSONObject: [
                "api": api, "api_id": "sfubot-dev", "api_secret": "sfubot-dev-secret", "identity": "identity.key", "session": "session.json",
                "email": "late@example.test", "display_name": "Late", "otp": backend.configuration.otp, "janus": Scene.janusURL!,
                "recordings": "recordings", "poll_seconds": 0.5, "receive_path": path.rawValue,
            ]).write(to: configFile)
            let (agent, running, me) = try await Self.startAgent(configFile, logger: Logger(label: "agent"))

            // The caller (key host) invites the agent with a key that is no longer the call's.
            let caller = try await Phone.login("caller", url: api, otp: backend.configuration.otp)
            let agentPublic = try DevicePublicKey(wire: try #require(try await caller.client.publicKeys(userIDs: [me.userID])["\(me.userID)_\(me.deviceID)"]))
            let room = try await Scene.createRoom()
            let stale = CallKey.random(), current = CallKey.random()
            let call = try await caller.client.startCall(.init(roomId: room, calleeIds: [me.userID],
                encryptedAESKeys: ["\(me.userID)_\(me.deviceID)": try KeyWrap.wrap(stale, for: agentPublic, from: caller.identity)], isVideo: false))
            var events = agent.events.makeAsyncIterator()
            #expect(await events.next() == call.id)

            // The host answers every request_aes_key from the agent with the current key.
            let times = TimeLog()
            let inbox = await caller.stomp.subscribe("/exchange/ecall.signal.out/\(caller.session.deviceId)")
            let answering = Task {
                for await frame in inbox {
                    guard let m = try? SignalMessage.parse(frame.body), m.kind == .requestAESKey, m.senderId == me.userID else { continue }
                    times.mark("request")
                    var answer = SignalMessage(type: .sendAESKey)
                    answer.callId = call.id
                    answer.participantId = me.userID
                    answer.participantDeviceId = me.deviceID
                    answer.encryptedAESKey = try? KeyWrap.wrap(current, for: agentPublic, from: caller.identity)
                    answer.senderId = caller.session.userId
                    answer.senderDeviceId = caller.session.deviceId
                    try? await caller.send(answer)
                }
            }
            let tone = try await Audio.tone(440, seconds: 6, in: dir)
            _ = try await Player(config: try Scene.config(room: room, display: "\(caller.session.userId):Caller", protection: .e2ee(KeyRing(current: current))),
                                 file: tone.path).run()
            try await Task.sleep(for: .seconds(1))
            var ended = SignalMessage(type: .callEnded)
            ended.callId = call.id
            ended.participantId = me.userID
            ended.participantDeviceId = me.deviceID
            try await caller.send(ended)
            #expect(await events.next() == -call.id)
            answering.cancel()

            let counters = await agent.counters
            #expect(counters.keyRequestsSent == 1 && counters.keysReceived == 1 && times.count("request") == 1,
                    "one request for a burst of failing frames: \(counters)")
            let manifest = try JSONDecoder.manifest.decode(RecordingManifest.self,
                from: Data(contentsOf: dir.appendingPathComponent("recordings/\(call.id)/manifest.json")))
            let feed = try #require(manifest.feeds.first)
            let onDisk = try #require(feed.onDisk, "the file was read back")
            print("agent with a stale key (\(path.rawValue)): \(feed.frames.dropped["no_key_opens"] ?? 0) frames lost, "
                  + "\(feed.frames.opened) of \(feed.frames.received) opened, \(onDisk.frames) in the file")
            // The frames that failed before the key came were held and opened with it: none lost,
            // every one in the file.
            #expect(feed.frames.dropped["no_key_opens"] == 0 && feed.frames.opened == feed.frames.received && feed.frames.opened >= 270,
                    "\(feed.frames)")
            #expect(onDisk.frames == feed.frames.opened, "\(onDisk)")
            running.cancel()
            _ = try? await running.value
            await caller.stomp.close()
        }
    }

    @Test(arguments: ReceivePath.allCases)
    func asKeyHostTheAgentRotatesAndGivesAStaleParticipantTheKey(path: ReceivePath) async throws {
        let dir = try Scene.tempDirectory("agent-host-\(path.rawValue)")
        try await Broker.withBackend { backend, api in
            // The agent plays a tone into the call it is invited to, and rotates every 3 s as host.
            let tone = try await Audio.tone(440, seconds: 3, in: dir)
            try DeviceIdentity.generate(.p256).write(toNewFile: dir.appendingPathComponent("identity.key").path)
            let configFile = dir.appendingPathComponent("agent.json")
            try JSONSerialization.data(withJSONObject: [
                "api": api, "api_id": "sfubot-dev", "api_secret": "sfubot-dev-secret", "identity": "identity.key", "session": "session.json",
                "email": "host@example.test", "display_name": "Host", "otp": backend.configuration.otp, "janus": Scene.janusURL!,
                "on_invite": "play", "play_file": tone.path, "poll_seconds": 0.5, "rotation_seconds": 3,
            ]).write(to: configFile)
            let (agent, running, me) = try await Self.startAgent(configFile, logger: Logger(label: "agent"))

            let phone = try await Phone.login("phone", url: api, otp: backend.configuration.otp)
            let room = try await Scene.createRoom()
            let agentPublic = try DevicePublicKey(wire: try #require(try await phone.client.publicKeys(userIDs: [me.userID])["\(me.userID)_\(me.deviceID)"]))
            let key = CallKey.random()
            let call = try await phone.client.startCall(.init(roomId: room, calleeIds: [me.userID],
                encryptedAESKeys: ["\(me.userID)_\(me.deviceID)": try KeyWrap.wrap(key, for: agentPublic, from: phone.identity)], isVideo: false))
            var events = agent.events.makeAsyncIterator()
            #expect(await events.next() == call.id)
            var handover = SignalMessage(type: .handoverHost)
            handover.callId = call.id
            handover.participantId = me.userID
            handover.participantDeviceId = me.deviceID
            try await phone.send(handover)

            // The phone lost the key: its recorder holds a stale one. It asks the host once, and
            // takes what the host sends, or rotates, only if the host's published key wrapped it.
            let ring = KeyRing(current: .random())
            let times = TimeLog()
            let inbox = await phone.stomp.subscribe("/exchange/ecall.signal.out/\(phone.session.deviceId)")
            let listening = Task {
                for await frame in inbox {
                    guard let m = try? SignalMessage.parse(frame.body), let box = m.encryptedAESKey,
                          let opened = try? KeyWrap.unwrap(box, with: phone.identity), opened.sender == agentPublic else { continue }
                    if m.kind == .sendAESKey { ring.setCurrent(opened.key); times.mark("key") }
                    if m.kind == .keyRotation { ring.schedule(opened.key, at: m.keyRotationTimestamp ?? 0); times.mark("rotation") }
                }
            }
            var request = SignalMessage(type: .requestAESKey)
            request.callId = call.id
            request.participantId = me.userID
            request.participantDeviceId = me.deviceID
            request.senderId = phone.session.userId
            request.senderDeviceId = phone.session.deviceId
            let asking = request
            var config = try Scene.config(room: room, display: "\(phone.session.userId):Phone", protection: .e2ee(ring),
                                          tap: { point, _, _ in if point == .afterOpen { times.mark("opened") } })
            config.receivePath = path
            config.onKeyMissing = { _ in
                guard times.first("request") == nil else { return }
                times.mark("request")
                Task { try? await phone.send(asking) }
            }
            let out = dir.appendingPathComponent("rec")
            let recording = Task { try await Recorder(config: config, directory: out).run() }
            try await Task.sleep(for: .seconds(9))
            recording.cancel()
            let manifest = try await recording.value
            listening.cancel()

            let requested = try #require(times.first("request"), "frames failed with the stale key and the phone asked")
            let keyed = try #require(times.first("key"), "the host answered")
            let opened = try #require(times.first("opened"))
            #expect(keyed.timeIntervalSince(requested) < 1 && opened.timeIntervalSince(requested) < 1,
                    "key \(keyed.timeIntervalSince(requested)) s, first opened frame \(opened.timeIntervalSince(requested)) s after the request")
            print("stale participant: key from the host \(keyed.timeIntervalSince(requested)) s, first opened \(opened.timeIntervalSince(requested)) s after the request")
            let counters = await agent.counters
            #expect(counters.keysSent == 1 && counters.rotationsMade >= 2, "\(counters)")
            #expect(times.count("rotation") >= 2, "the phone got the host's rotations")
            let feed = try #require(manifest.feeds.first)
            print("stale participant (\(path.rawValue)): \(feed.frames.dropped["no_key_opens"] ?? 0) frames lost, "
                  + "\(feed.frames.opened) of \(feed.frames.received) opened, \(feed.onDisk?.frames ?? -1) in the file")
            // The frames before the key arrived were held and opened with it; through two
            // rotations every frame opened, and every one is in the file.
            #expect(feed.frames.dropped["no_key_opens"] == 0 && feed.frames.opened == feed.frames.received, "\(feed.frames)")
            #expect(feed.frames.opened >= 250, "\(feed.frames)")
            #expect(feed.onDisk?.frames == feed.frames.opened, "\(String(describing: feed.onDisk))")
            running.cancel()
            _ = try? await running.value
            await phone.stomp.close()
        }
    }
}
