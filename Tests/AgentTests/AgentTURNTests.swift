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
        /// Where the agent's TURN server comes from.
        enum Mode {
            /// `/credentials`' `noneTlsUrl`, `turn:` over UDP.
            case credentials
            /// Its own `--ice-server turns:` with `--turn-ca-file` and `--turn-secret-file`.
            case ownTURNS
            /// `/credentials`' `tlsUrl`, `turns:127.0.0.1:PORT` (no `noneTlsUrl`), verified against
            /// the config's `turn_ca_file`.
            case credentialsTURNS
        }

        static let secret = "agent-turn-shared-secret", tlsPort = 5352
        static let janusRTP = 13300...13399, relayPorts = 14300...14399

        @Test("invited, the agent records the caller's tone through coturn with /credentials' REST credentials; none in its log")
        func recordsThroughTheRelay() async throws {
            let o = try await Self.scene(.credentials)
            try await Self.checkRecorded(o)
        }

        @Test("the agent with --ice-server turns: and --turn-ca-file (coturn's REST credentials from --turn-secret-file) records the caller's tone over TLS to coturn")
        func recordsThroughTLS() async throws {
            let o = try await Self.scene(.ownTURNS)
            try await Self.checkRecorded(o)
            #expect(o.counts.turnTLS > 100, "the agent reached coturn over TLS: \(o.counts)")
        }

        @Test("relay only, the agent's one TURN server /credentials' tlsUrl (turns:, turn_ca_file): the tone is recorded; coturn saw TLS only, no direct packet")
        func recordsThroughCredentialsTLSURL() async throws {
            let o = try await Self.scene(.credentialsTURNS)
            try await Self.checkRecorded(o)
            #expect(o.counts.turnTLS > 100 && o.counts.turnUDP == 0 && o.counts.turnTCP == 0, "TURN reached coturn on its TLS port only: \(o.counts)")
            #expect(o.counts.directIn == 0 && o.counts.directOut == 0, "no direct packet: \(o.counts)")
            #expect(o.log.contains("TURN from /credentials: turns:127.0.0.1:\(Self.tlsPort)?transport=tcp (turns: verified against \(o.caFile))"), "\(o.log.suffix(2000))")
        }

        @Test("a turn_ca_file that does not sign coturn's certificate: the agent says so, naming the certificate and the CA file, and records nothing")
        func credentialsTLSURLWithTheWrongCA() async throws {
            let o = try await Self.scene(.credentialsTURNS, wrongCA: true)
            let expected = "the TURN server's certificate for 127.0.0.1 did not verify against \(o.caFile): "
            print("agent with the wrong CA: \(o.manifest?.gaps.count ?? -1) gap(s), first: \(o.manifest?.gaps.first?.cause ?? "no manifest"); \(o.counts)")
            #expect(o.log.contains(expected), "the agent's log names the certificate and the CA file: \(o.log.suffix(3000))")
            if let manifest = o.manifest {
                #expect(manifest.gaps.contains { $0.cause.hasPrefix(expected) }, "the recording's gaps name it: \(manifest.gaps.map(\.cause))")
                #expect(manifest.feeds.allSatisfy { $0.frames.received == 0 } && manifest.candidatePair == nil, "nothing reached the agent")
            }
            #expect(o.counts.relayed > 100, "the caller's media did reach Janus through coturn: \(o.counts)")
            #expect(!o.log.contains(o.phonePassword) && !o.log.contains(Self.secret), "no TURN credential in the agent's log")
        }

        struct Outcome {
            var manifest: RecordingManifest?
            var out: URL
            var callerID: Int64
            var counts: RelayOnlyFirewall.Counts
            var log: String
            var caFile: String
            var phonePassword: String
        }

        /// The recording decodes to the tone, through a relay pair, carried by coturn; no credential logged.
        static func checkRecorded(_ o: Outcome) async throws {
            let manifest = try #require(o.manifest, "no manifest in \(o.out.path)")
            print("agent through coturn: pair \(manifest.candidatePair?.summary ?? "none"); \(o.counts)")
            #expect(manifest.candidatePair?.local == "relay", "\(manifest.candidatePair.map(\.summary) ?? "none")")
            let feed = try #require(manifest.feeds.first { $0.userID == String(o.callerID) }, "no feed of the caller")
            let samples = try await Audio.decode(o.out.appendingPathComponent(feed.file))
            #expect(abs((Audio.dominantFrequency(samples) ?? 0) - 440) <= 9)
            #expect(Double(samples.count) / 48000 >= 5, "\(Double(samples.count) / 48000) s of 8")
            #expect(Double(o.counts.relayed) >= 45 * Double(samples.count) / 48000, "coturn carried what was recorded: \(o.counts)")
            #expect(!o.log.contains(o.phonePassword) && !o.log.contains(secret), "no TURN credential in the agent's log")
        }

        /// The agent invited to a call by a phone that plays an 8 s tone relayed through coturn
        /// (over TLS when the agent's TURN is `/credentials`' `turns:`, so that coturn's TLS port
        /// is the only one used), then the call ended.
        static func scene(_ mode: Mode, wrongCA: Bool = false) async throws -> Outcome {
            let dir = try Scene.tempDirectory("agent-turn")
            return try await OwnJanus.with(port: 8223, in: dir, rtpPorts: janusRTP) { janus in
                let certificate = mode == .credentials ? nil : try await OwnCoturn.selfSigned("coturn", for: ["localhost", "127.0.0.1"], in: dir)
                // Another self-signed certificate for the same names: right host, wrong issuer.
                let other = wrongCA ? try await OwnCoturn.selfSigned("other-ca", for: ["localhost", "127.0.0.1"], in: dir).cert : nil
                return try await OwnCoturn.with(port: 3481, relayPorts: relayPorts, auth: .sharedSecret(secret),
                                                tls: certificate.map { .init(port: tlsPort, cert: $0.cert, key: $0.key) }, in: dir) { coturn in
                    var outcome: Outcome?
                    try await Broker.withBackend({ c in
                        switch mode {
                        case .credentials: c.turn = .init(url: coturn.url(), secret: secret)
                        case .ownTURNS: break
                        case .credentialsTURNS: c.turn = .init(url: nil, secret: secret, tlsPort: tlsPort)
                        }
                    }) { backend, api in
                        let caFile = other ?? certificate?.cert ?? ""
                        outcome = try await call(mode, janus: janus, coturn: coturn, backend: backend, api: api, caFile: caFile, phoneCA: certificate?.cert, in: dir)
                    }
                    return try #require(outcome)
                }
            }
        }

        static func call(_ mode: Mode, janus: OwnJanus, coturn: OwnCoturn, backend: ECallStandIn, api: String,
                         caFile: String, phoneCA: String?, in dir: URL) async throws -> Outcome {
            let identity = try DeviceIdentity.generate(.p256)
            try identity.write(toNewFile: dir.appendingPathComponent("identity.key").path)
            let configFile = dir.appendingPathComponent("agent.json")
            var json: [String: Any] = [
                "api": api, "api_id": "sfubot-dev", "api_secret": "sfubot-dev-secret", "identity": "identity.key", "session": "session.json",
                "email": "agent-turn@example.test", "display_name": "Recorder", "otp": backend.configuration.otp, "janus": janus.url,
                "on_invite": "record", "recordings": "recordings", "poll_seconds": 0.5,
            ]
            // /credentials' tlsUrl is TURN now: the Web-STOMP URL comes from the config.
            if mode == .credentialsTURNS {
                json["stomp"] = Broker.url!
                json["turn_ca_file"] = caFile
            }
            try JSONSerialization.data(withJSONObject: json).write(to: configFile)
            let firewall = try await RelayOnlyFirewall(janusRTP: janusRTP, relayPorts: relayPorts, turnPort: coturn.port, tlsPort: coturn.tls?.port)
            let agentICE: ICEServers? = switch mode {
            case .credentials: nil
            case .ownTURNS:
                ICEServers(servers: [try ICEServer(parsing: "turns:localhost:\(tlsPort)")],
                           credential: .sharedSecret(TURNSharedSecret(secret: Array(secret.utf8), user: "agent")), policy: .relay, caFile: caFile)
            // Relay only, and no --ice-server: the one TURN server is /credentials' tlsUrl.
            case .credentialsTURNS: ICEServers(policy: .relay)
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
                if mode == .ownTURNS {
                    // /credentials carries no TURN here: the phone makes coturn's REST credentials itself.
                    let made = TURNSharedSecret(secret: Array(secret.utf8), user: "caller").credential(now: Date())
                    (phoneCredentials.turnUsername, phoneCredentials.turnPassword) = (made.username, made.password)
                }
                var phone = try Scene.config(room: room, display: "\(caller.session.userId):Caller", protection: .e2ee(KeyRing(current: key)))
                phone.janusURL = janus.url
                // With the agent's TURN over TLS, the phone's too (right CA), so that coturn's plain port sees nothing.
                let phoneTLS = mode == .credentialsTURNS && caFile == phoneCA
                phone.ice = ICEServers(servers: [try ICEServer(parsing: phoneTLS ? "turns:127.0.0.1:\(tlsPort)" : coturn.url())],
                                       credential: .password(username: phoneCredentials.turnUsername ?? "", password: phoneCredentials.turnPassword ?? ""),
                                       policy: .relay, caFile: phoneTLS ? phoneCA : nil)
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
                return Outcome(manifest: try? RecordingManifest.read(from: out), out: out, callerID: caller.session.userId, counts: counts,
                               log: log.text, caFile: caFile, phonePassword: phoneCredentials.turnPassword ?? "-")
            } catch {
                await firewall.remove()
                throw error
            }
        }
    }
}
