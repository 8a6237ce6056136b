import Bot
import FrameCrypto
import Foundation
import Janus
import Locking
import Synchronization
import Testing
import TestSupport

extension MediaScene {
    /// Issue 28, TLS to the TURN server: `turns:` through sfubot's own TLS bridge
    /// (`TURNTLSBridge`), coturn with a self-signed certificate made by the test and TLS on
    /// port 5349, the same scene as `TURNTests` (its Janus, coturn and firewall).
    @Suite struct TURNTLSTests {
        static let tlsPort = 5349

        /// coturn's TLS with a new self-signed certificate for `names`; the certificate is the CA file.
        static func tls(_ names: [String]) -> (URL) async throws -> OwnCoturn.TLS {
            { dir in
                let (cert, key) = try await OwnCoturn.selfSigned("coturn", for: names, in: dir)
                return OwnCoturn.TLS(port: tlsPort, cert: cert, key: key)
            }
        }

        static func turns(_ host: String, ca: String?, _ policy: ICEServers.Policy = .relay) throws -> ICEServers {
            var ice = try TURNTests.password(["turns:\(host):\(tlsPort)"], policy)
            ice.caFile = ca
            return ice
        }

        /// Player and recorder both go through turns: (the scene gives them the same servers).
        @Test("relay policy through turns: (sfubot's TLS, verified against --turn-ca-file): the player's tone is recorded; coturn saw TLS only, no plain TURN, no direct packet")
        func relayOverTLS() async throws {
            let o = try await TURNTests.scene("relay-tls", auth: TURNTests.user, tls: Self.tls(["localhost", "127.0.0.1"])) { coturn in
                try Self.turns("localhost", ca: coturn.tls?.cert)
            }
            TURNTests.report("relay-tls", o)
            TURNTests.checkRelayed(o, turnOver: "tls")
            #expect(o.firewall.turnTLS > 100 && o.firewall.turnTCP == 0 && o.firewall.turnUDP == 0,
                    "TURN reached coturn on its TLS port only: \(o.firewall)")
            #expect(o.firewall.directIn == 0 && o.firewall.directOut == 0, "no direct packet: \(o.firewall)")
        }

        /// The recorder's failure when its TLS to coturn does not verify (the player goes
        /// through coturn over UDP).
        static func refused(_ name: String, tls names: [String], recorder: @escaping (OwnCoturn) throws -> ICEServers) async throws -> TURNTests.Outcome {
            let o = try await TURNTests.scene(name, auth: TURNTests.user, tls: Self.tls(names), recordFor: .seconds(8), recorderICE: recorder) {
                try TURNTests.password([$0.url()], .relay)
            }
            TURNTests.report(name, o)
            #expect(o.manifest.feeds.allSatisfy { $0.frames.received == 0 }, "nothing reached the recorder")
            #expect(o.manifest.candidatePair == nil)
            if let gap = o.manifest.gaps.first {
                // As a refused password: known within the join, not after an ICE timeout.
                #expect(gap.start.timeIntervalSince(o.manifest.started) < 6, "the refusal is known \(gap.start.timeIntervalSince(o.manifest.started)) s after the start")
            }
            #expect((1...8).contains(o.manifest.gaps.count), "backs off: \(o.manifest.gaps.count) gaps in 8 s")
            return o
        }

        @Test("a certificate another CA file does not trust is refused; the recorder's gaps say so, naming host and CA file")
        func wrongCA() async throws {
            // Another self-signed certificate for the same names: right host, wrong issuer.
            let other = try await OwnCoturn.selfSigned("other-ca", for: ["localhost", "127.0.0.1"], in: try Scene.tempDirectory("turn-tls-other-ca")).cert
            let o = try await Self.refused("tls-wrong-ca", tls: ["localhost", "127.0.0.1"]) { _ in try Self.turns("localhost", ca: other) }
            let cause = o.manifest.gaps.first?.cause ?? ""
            let expected = "the TURN server's certificate for localhost did not verify against \(other): "
            #expect(cause.hasPrefix(expected), "the gap names the certificate, host and CA file: \(o.manifest.gaps.map(\.cause))")
        }

        @Test("a certificate for another host name is refused, though its CA is trusted")
        func hostnameMismatch() async throws {
            let o = try await Self.refused("tls-wrong-host", tls: ["turn.example.org"]) { coturn in
                try Self.turns("localhost", ca: coturn.tls?.cert)
            }
            let cause = o.manifest.gaps.first?.cause ?? ""
            #expect(cause.contains("the TURN server's certificate for localhost did not verify") && cause.contains("it is not for localhost"),
                    "the gap names the host mismatch: \(o.manifest.gaps.map(\.cause))")
        }

        @Test("a player whose turns: certificate does not verify says so in its status and backs off")
        func playerRefused() async throws {
            let dir = try Scene.tempDirectory("turn-tls-player")
            let other = try await OwnCoturn.selfSigned("other-ca", for: ["localhost"], in: dir).cert
            try await OwnJanus.with(port: 8221, in: dir, rtpPorts: TURNTests.janusRTP) { janus in
                try await OwnCoturn.with(port: 3478, relayPorts: TURNTests.relayPorts, auth: TURNTests.user, tls: try await Self.tls(["localhost"])(dir), in: dir) { _ in
                    let room = try await Scene.createPermanentRoom(janus.url)
                    var config = try Scene.config(room: room, display: "4:Tone", protection: .e2ee(KeyRing(current: .random())))
                    config.janusURL = janus.url
                    config.ice = try Self.turns("localhost", ca: other)
                    let player = Player(config: config, file: try await Audio.tone(440, seconds: 3, in: dir).path, loop: true)
                    let run = Task { _ = try? await player.run() }
                    try await Task.sleep(for: .seconds(10))
                    let status = player.status.snapshot
                    run.cancel()
                    _ = await run.value
                    print("turn tls player-wrong-ca: \(status.comebacks) comebacks in 10 s; last error: \(status.lastError ?? "none")")
                    #expect(status.lastError?.contains("the TURN server's certificate for localhost did not verify against \(other)") == true, "\(status.lastError ?? "none")")
                    #expect(status.comebacks <= 6, "backs off as for a refused password: \(status.comebacks) attempts in 10 s")
                }
            }
        }

        /// What the bridge adds to joining: a recorder's time from start to its first decrypted
        /// frame, relay only, TURN over TCP against turns: (TLS through the bridge), alternated,
        /// three of each, with a player already sending. Printed, not asserted (a shared machine).
        @Test("join time through turns: against turn:?transport=tcp (measured, printed)")
        func joinTime() async throws {
            let dir = try Scene.tempDirectory("turn-tls-join")
            try await OwnJanus.with(port: 8221, in: dir, rtpPorts: TURNTests.janusRTP) { janus in
                try await OwnCoturn.with(port: 3478, relayPorts: TURNTests.relayPorts, auth: TURNTests.user, tls: try await Self.tls(["localhost"])(dir), in: dir) { coturn in
                    let room = try await Scene.createPermanentRoom(janus.url)
                    let ring = KeyRing(current: .random())
                    func config(_ display: String, _ ice: ICEServers) throws -> BotConfig {
                        var c = try Scene.config(room: room, display: display, protection: .e2ee(ring))
                        c.janusURL = janus.url
                        c.ice = ice
                        return c
                    }
                    let tone = try await Audio.tone(440, seconds: 6, in: dir)
                    let player = Task { _ = try? await Player(config: try config("4:Tone", TURNTests.password([coturn.url()], .relay)), file: tone.path, loop: true).run() }
                    defer { player.cancel() }
                    try await Task.sleep(for: .seconds(3))
                    var times: [String: [Double]] = [:]
                    for round in 1...3 {
                        for (kind, ice) in [("tcp", try TURNTests.password([coturn.url(tcp: true)], .relay)), ("tls", try Self.turns("localhost", ca: coturn.tls?.cert))] {
                            let first = Locked<Date?>(nil)
                            var c = try config("9:Recorder", ice)
                            c.frameTap = { point, _, _ in if point == .afterOpen { first.withLock { if $0 == nil { $0 = Date() } } } }
                            let started = Date()
                            let recorder = Task { _ = try? await Recorder(config: c, directory: dir.appendingPathComponent("rec-\(kind)-\(round)"), duration: .seconds(30)).run() }
                            while first.withLock({ $0 }) == nil, Date().timeIntervalSince(started) < 20 { try await Task.sleep(for: .milliseconds(10)) }
                            recorder.cancel()
                            _ = await recorder.value
                            let at = try #require(first.withLock { $0 }, "round \(round) over \(kind): no frame within 20 s")
                            times[kind, default: []].append(at.timeIntervalSince(started))
                        }
                    }
                    func median(_ xs: [Double]) -> Double { xs.sorted()[xs.count / 2] }
                    let tcp = times["tcp"] ?? [], tls = times["tls"] ?? []
                    print(String(format: "turn join: first frame after %@ s over TURN/TCP (median %.2f), %@ s over turns: (median %.2f): the bridge adds %.0f ms",
                                 tcp.map { String(format: "%.2f", $0) }.joined(separator: ", "), median(tcp),
                                 tls.map { String(format: "%.2f", $0) }.joined(separator: ", "), median(tls), (median(tls) - median(tcp)) * 1000))
                    player.cancel()
                    _ = await player.value
                }
            }
        }
    }
}
