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

extension MediaScene {
    /// A scripted ECall call on loopback: the real Janus and RabbitMQ, the stand-in backend, a
    /// caller acting as the phone (and key host), and `sfubot agent` invited to record.
    @Suite(.serialized, .enabled(if: Broker.url != nil, "needs the local RabbitMQ: run `make test`"))
    struct AgentTests {
        /// A phone: REST client, identity, STOMP.
        struct Phone {
            let client: ECallClient
            let identity: DeviceIdentity
            let session: SessionState
            let stomp: StompClient

            static func login(_ name: String, url: String, otp: String) async throws -> Phone {
                let device = try await Broker.Device.login(name, url: url, otp: otp)
                let stomp = device.stomp(logger: Logger(label: "test.phone"))
                try await stomp.start()
                return Phone(client: device.client, identity: device.identity, session: device.session, stomp: stomp)
            }

            func send(_ m: SignalMessage) async throws {
                try await stomp.send("/exchange/ecall.signal.in", body: m.json,
                                     headers: [("content-type", "application/json"), ("authorization", "Bearer \(session.accessToken)")])
            }
        }

        /// `sfubot agent` from a config file, running until cancelled, once it has logged in.
        /// Signed as `sfubot agent` signs by default: with its device identity key, if it can.
        /// `ice`: what `sfubot agent`'s ICE options would give it.
        static func startAgent(_ configFile: URL, logger: Logger, keyLog: KeyLog? = nil, ice: ICEServers? = nil) async throws
            -> (Agent, Task<Void, any Error>, (userID: Int64, deviceID: Int64)) {
            var config = try AgentConfig.load(configFile.path)
            if let ice { config.ice = ice }
            let agent = Agent(config: config, pipelines: try PipelineLibrary(), logger: logger, keyLog: keyLog,
                              signingKey: try? config.identitySigningKey())
            let running = Task { try await agent.run(readOTP: { nil }) }
            for _ in 0..<100 {
                if let ids = await agent.device { return (agent, running, ids) }
                try await Task.sleep(for: .milliseconds(100))
            }
            running.cancel()
            throw AgentError.backend("the agent did not log in within 10 s")
        }

        @Test(arguments: [DeviceIdentity.Kind.p256, .rsa])
        func invitedAgentRecordsThroughARotationAndLeavesWhenTheCallEnds(agentKey: DeviceIdentity.Kind) async throws {
            let dir = try Scene.tempDirectory("agent-\(agentKey.rawValue)")
            try await Broker.withBackend { backend, api in
                // The agent, with a fresh identity, configured from a file as a user would.
                let identity = try DeviceIdentity.generate(agentKey)
                try identity.write(toNewFile: dir.appendingPathComponent("identity.key").path)
                let configFile = dir.appendingPathComponent("agent.json")
                try JSONSerialization.data(withJSONObject: [
                    "api": api, "api_id": "sfubot-dev", "api_secret": "sfubot-dev-secret", "identity": "identity.key", "session": "session.json",
                    "email": "agent@example.test", "display_name": "Recorder", "otp": backend.configuration.otp, "janus": Scene.janusURL!,
                    "on_invite": "record", "recordings": "recordings", "poll_seconds": 0.5,
                ]).write(to: configFile)
                let log = CapturedLog()
                // With a key log (`--key-log`): every key the agent takes, with its time.
                let keyLogFile = dir.appendingPathComponent("keys.jsonl").path
                let (agent, running, me) = try await Self.startAgent(configFile, logger: log.logger("agent"), keyLog: try KeyLog(path: keyLogFile))

                // The caller creates the room and invites the agent with the key wrapped for its device.
                let caller = try await Phone.login("caller", url: api, otp: backend.configuration.otp)
                let room = try await Scene.createRoom()
                func randomHex() -> String { (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined() }
                let firstHex = randomHex(), secondHex = randomHex()
                let first = try CallKey(hex: firstHex)
                let agentKeyWire = try #require(try await caller.client.publicKeys(userIDs: [me.userID])["\(me.userID)_\(me.deviceID)"])
                let agentPublic = try DevicePublicKey(wire: agentKeyWire)
                #expect(agentPublic == identity.publicKey)
                let call = try await caller.client.startCall(.init(roomId: room, calleeIds: [me.userID],
                    encryptedAESKeys: ["\(me.userID)_\(me.deviceID)": try KeyWrap.wrap(first, for: agentPublic, from: caller.identity)], isVideo: false))
                var joined = agent.events.makeAsyncIterator()
                #expect(await joined.next() == call.id)

                // The caller talks (10 s of 440 Hz), sealed with the call key.
                let tone = try await Audio.tone(440, seconds: 10, in: dir)
                let ring = KeyRing(current: first)
                let talking = Task {
                    try await Player(config: try Scene.config(room: room, display: "\(caller.session.userId):Caller", protection: .e2ee(ring)), file: tone.path).run()
                }
                try await Task.sleep(for: .seconds(4))

                // A forged rotation: a logged-in stranger wraps its own key for the agent.
                let mallory = try await Phone.login("mallory", url: api, otp: backend.configuration.otp)
                var forged = SignalMessage(type: .keyRotation)
                forged.callId = call.id
                forged.participantId = me.userID
                forged.participantDeviceId = me.deviceID
                forged.encryptedAESKey = try KeyWrap.wrap(CallKey.random(), for: agentPublic, from: mallory.identity)
                forged.keyRotationTimestamp = Date().timeIntervalSince1970 + 0.5
                forged.senderId = mallory.session.userId
                forged.senderDeviceId = mallory.session.deviceId
                try await mallory.send(forged)

                // The host's rotation: the new key opens at once as the future key, current in 1.5 s.
                let second = try CallKey(hex: secondHex)
                let at = Date().timeIntervalSince1970 + 1.5
                var rotation = SignalMessage(type: .keyRotation)
                rotation.callId = call.id
                rotation.participantId = me.userID
                rotation.participantDeviceId = me.deviceID
                rotation.encryptedAESKey = try KeyWrap.wrap(second, for: agentPublic, from: caller.identity)
                rotation.keyRotationTimestamp = at
                rotation.senderId = caller.session.userId
                rotation.senderDeviceId = caller.session.deviceId
                try await caller.send(rotation)
                ring.schedule(second, at: at)
                // Garbage on the agent's queue: counted, no crash.
                var unknown = SignalMessage(type: .callEnded)
                unknown.type = "future_feature"
                unknown.callId = call.id
                unknown.participantDeviceId = me.deviceID
                try await caller.send(unknown)

                let report = try await talking.value
                #expect(report.framesSent >= 480)
                var ended = SignalMessage(type: .callEnded)
                ended.callId = call.id
                ended.participantId = me.userID
                ended.participantDeviceId = me.deviceID
                try await caller.client.endCall(callID: call.id)
                try await caller.send(ended)
                #expect(await joined.next() == -call.id, "the agent left on call_ended")

                let counters = await agent.counters
                #expect(counters.rotationsApplied == 1 && counters.rotationsRefused == 1, "\(counters)")
                #expect(counters.unknownSignals == 1)
                // The recording: the caller's tone, every frame opened across the rotation, no gap.
                let out = dir.appendingPathComponent("recordings/\(call.id)")
                let manifest = try JSONDecoder.manifest.decode(RecordingManifest.self, from: Data(contentsOf: out.appendingPathComponent("manifest.json")))
                let feed = try #require(manifest.feeds.first { $0.userID == String(caller.session.userId) })
                #expect(feed.frames.droppedTotal == 0 && feed.frames.opened >= 400, "\(feed.frames)")
                #expect(manifest.ended != nil, "finished on call_ended")
                // Signed by the device identity when it is P-256 (RSA cannot sign: unsigned).
                if agentKey == .p256 {
                    let signer = try AgentConfig.load(configFile.path).identitySigningKey()
                    let verified = Verifier(directory: out, expected: .fingerprint(signer.publicKey.fingerprint)).run()
                    #expect(verified.ok, "\(verified.text)")
                } else {
                    #expect(manifest.proof == nil)
                }
                let samples = try await Audio.decodeTimed(out.appendingPathComponent(feed.file))
                #expect(abs((Audio.dominantFrequency(samples) ?? 0) - 440) <= 9)
                #expect(Double(samples.count) / 48000 >= 8, "\(Double(samples.count) / 48000) s")
                let quiet = Audio.quietWindows(samples)
                #expect(quiet.isEmpty, "no 100 ms gap, across the rotation too: quiet at \(quiet) s")

                running.cancel()
                _ = try? await running.value
                // Nothing secret reached the logs, at any level.
                let logged = log.text
                let session = try #require(try SessionStore(path: dir.appendingPathComponent("session.json").path).load())
                let secrets = [firstHex, secondHex] + [session.accessToken, session.refreshToken, identity.pkcs8PEM.split(separator: "\n")[1].description, caller.session.accessToken]
                for secret in secrets { #expect(!logged.contains(secret), "a secret in the logs") }
                #expect(logged.contains("refused key_rotation"), "the forged rotation is logged")

                // The key log: private; the first key from the join, the rotation's from its
                // timestamp, the forged key nowhere; the reader picks each by time.
                let mode = (try FileManager.default.attributesOfItem(atPath: keyLogFile)[.posixPermissions] as? NSNumber)?.intValue ?? -1
                #expect(mode & 0o777 == 0o600)
                let keys = try KeyLog.Entries(path: keyLogFile, call: call.id)
                #expect(keys.keys.map(\.key.exportedHex) == [firstHex, secondHex], "\(keys.keys.count) keys")
                #expect(keys.keys.count == 2 && keys.keys[1].from == at)
                #expect(keys.candidates(at: at - 1).current?.exportedHex == firstHex)
                #expect(keys.candidates(at: at + 1).current?.exportedHex == secondHex)
                await caller.stomp.close()
                await mallory.stomp.close()
            }
        }
    }
}

extension JSONDecoder {
    static var manifest: JSONDecoder {
        let d = JSONDecoder()
        d.dateDecodingStrategy = .custom { decoder in
            let text = try decoder.singleValueContainer().decode(String.self)
            return try Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true))
        }
        return d
    }
}

/// When things happened, from any thread.
final class TimeLog: Sendable {
    private let marks = Locked<[(String, Date)]>([])
    func mark(_ what: String) { marks.withLock { $0.append((what, Date())) } }
    func first(_ what: String) -> Date? { marks.withLock { $0.first { $0.0 == what }?.1 } }
    func count(_ what: String) -> Int { marks.withLock { $0.filter { $0.0 == what }.count } }
}
