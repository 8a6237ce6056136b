import Bot
import ECall
import ECallAgent
import ECallStandIn
import FrameCrypto
import Foundation
import GStreamerKit
import Testing
import TestSupport

extension MediaScene {
    /// The agent through coturn with the TURN credentials ECall's `/credentials` gives: the
    /// stand-in serves coturn REST credentials (`use-auth-secret`), a firewall lets only
    /// coturn's relay reach Janus's RTP ports, and the caller (a phone) is relayed too.
    @Suite(.serialized, .enabled(if: Broker.url != nil, "needs the local RabbitMQ: run `make test`"))
    struct AgentTURNTests {
        @Test("invited, the agent records the caller's tone through coturn with /credentials' REST credentials; none in its log")
        func recordsThroughTheRelay() async throws { try await Self.scene(tls: false) }

        @Test("the agent with --ice-server turns: and --turn-ca-file (coturn's REST credentials from --turn-secret-file) records the caller's tone over TLS to coturn")
        func recordsThroughTLS() async throws { try await Self.scene(tls: true) }

        /// `tls`: the agent's TURN is its own `turns:` option (sfubot's TLS, verified against the
        /// certificate made here) instead of `/credentials`' `turn:` URL.
        static func scene(tls: Bool) async throws {
            let dir = try Scene.tempDirectory("agent-turn")
            let secret = "agent-turn-shared-secret"
            let janusRTP = 13300...13399, relay = 14300...14399
            try await OwnJanus.with(port: 8223, in: dir, rtpPorts: janusRTP) { janus in
                let certificate = tls ? try await OwnCoturn.selfSigned("coturn", for: ["localhost"], in: dir) : nil
                try await OwnCoturn.with(port: 3481, relayPorts: relay, auth: .sharedSecret(secret),
                                         tls: certificate.map { .init(port: 5352, cert: $0.cert, key: $0.key) }, in: dir) { coturn in
                    try await Broker.withBackend({ if !tls { $0.turn = (url: coturn.url(), secret: secret) } }) { backend, api in
                        let identity = try DeviceIdentity.generate(.p256)
                        try identity.write(toNewFile: dir.appendingPathComponent("identity.key").path)
                        let configFile = dir.appendingPathComponent("agent.json")
                        try JSONSerialization.data(withJSONObject: [
                            "api": api, "api_id": "sfubot-dev", "api_secret": "sfubot-dev-secret", "identity": "identity.key", "session": "session.json",
                            "email": "agent-turn@example.test", "display_name": "Recorder", "otp": backend.configuration.otp, "janus": janus.url,
                            "on_invite": "record", "recordings": "recordings", "poll_seconds": 0.5,
                        ]).write(to: configFile)
                        let firewall = try await RelayOnlyFirewall(janusRTP: janusRTP, relayPorts: relay, turnPort: coturn.port, tlsPort: coturn.tls?.port)
                        let agentICE = try certificate.map {
                            ICEServers(servers: [try ICEServer(parsing: "turns:localhost:5352")],
                                       credential: .sharedSecret(TURNSharedSecret(secret: Array(secret.utf8), user: "agent")), policy: .relay, caFile: $0.cert)
                        }
                        do {
                            let log = CapturedLog()
                            let (agent, running, me) = try await AgentTests.startAgent(configFile, logger: log.logger("agent"), ice: agentICE)
                            let caller = try await AgentTests.Phone.login("turn-caller", url: api, otp: backend.configuration.otp)
                            let room = try await Scene.createPermanentRoom(janus.url)
                            let key = CallKey.random()
                            let agentPublic = try DevicePublicKey(wire: try #require(try await caller.client.publicKeys(userIDs: [me.userID])["\(me.userID)_\(me.deviceID)"]))
                            let call = try await caller.client.startCall(.init(roomId: room, calleeIds: [me.userID],
                                encryptedAESKeys: ["\(me.userID)_\(me.deviceID)": try KeyWrap.wrap(key, for: agentPublic, from: caller.identity)], isVideo: false))
                            var joined = agent.events.makeAsyncIterator()
                            #expect(await joined.next() == call.id)
                            // The phone: relayed only, with the credentials its own /credentials gives.
                            var phoneCredentials = try await caller.client.credentials()
                            if tls {
                                // /credentials carries no TURN here: the phone makes coturn's REST credentials itself.
                                let made = TURNSharedSecret(secret: Array(secret.utf8), user: "caller").credential(now: Date())
                                (phoneCredentials.turnUsername, phoneCredentials.turnPassword) = (made.username, made.password)
                            }
                            var phone = try Scene.config(room: room, display: "\(caller.session.userId):Caller", protection: .e2ee(KeyRing(current: key)))
                            phone.janusURL = janus.url
                            phone.ice = ICEServers(servers: [try ICEServer(parsing: coturn.url())],
                                                   credential: .password(username: phoneCredentials.turnUsername ?? "", password: phoneCredentials.turnPassword ?? ""), policy: .relay)
                            let tone = try await Audio.tone(440, seconds: 8, in: dir)
                            _ = try await Player(config: phone, file: tone.path).run()
                            try await caller.client.endCall(callID: call.id)
                            var ended = SignalMessage(type: .callEnded)
                            ended.callId = call.id
                            ended.participantId = me.userID
                            ended.participantDeviceId = me.deviceID
                            try await caller.send(ended)
                            #expect(await joined.next() == -call.id, "the agent left on call_ended")
                            running.cancel()
                            _ = try? await running.value
                            await caller.stomp.close()
                            let counts = try await firewall.counts()
                            await firewall.remove()

                            let out = dir.appendingPathComponent("recordings/\(call.id)")
                            let manifest = try RecordingManifest.read(from: out)
                            print("agent through coturn: pair \(manifest.candidatePair?.summary ?? "none"); \(counts)")
                            #expect(manifest.candidatePair?.local == "relay", "\(manifest.candidatePair.map(\.summary) ?? "none")")
                            let feed = try #require(manifest.feeds.first { $0.userID == String(caller.session.userId) })
                            let samples = try await Audio.decode(out.appendingPathComponent(feed.file))
                            #expect(abs((Audio.dominantFrequency(samples) ?? 0) - 440) <= 9)
                            #expect(Double(samples.count) / 48000 >= 5, "\(Double(samples.count) / 48000) s of 8")
                            #expect(Double(counts.relayed) >= 45 * Double(samples.count) / 48000, "coturn carried what was recorded: \(counts)")
                            #expect(!log.text.contains(phoneCredentials.turnPassword ?? "-") && !log.text.contains(secret), "no TURN credential in the agent's log")
                            if tls { #expect(counts.turnTLS > 100, "the agent reached coturn over TLS: \(counts)") }
                        } catch {
                            await firewall.remove()
                            throw error
                        }
                    }
                }
            }
        }
    }
}
