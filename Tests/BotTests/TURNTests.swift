import Bot
import FrameCrypto
import Foundation
import GStreamerKit
import Janus
import Testing
import TestSupport

extension MediaScene {
    /// Issue 28: recording through a TURN relay (Debian's coturn, started by the test) when a
    /// firewall lets no UDP between the bots and Janus's RTP ports except from and to coturn's
    /// relay ports (`RelayOnlyFirewall`, iptables with counters).
    ///
    /// Each test has a Janus of its own (port 8221, RTP 13100-13199), a coturn of its own and
    /// one E2EE room: a player loops a 440 Hz tone (user 4) and a recorder records it, both
    /// through coturn; the recording must decode to the tone and say in its manifest that its
    /// media came over a relay candidate pair.
    @Suite struct TURNTests {
        static let recordFor: Duration = .seconds(12)
        static let janusRTP = 13100...13199
        /// Below the kernel's ephemeral ports (32768-60999), where the bots' own sockets are:
        /// a bot port inside this range would pass the firewall as relayed.
        static let relayPorts = 14100...14199
        static let user = OwnCoturn.Auth.user("sfubot-test", password: "correct-horse")

        struct Outcome {
            var manifest: RecordingManifest
            var recorderError: (any Error)?
            var firewall: RelayOnlyFirewall.Counts
            var tone: Double?
            var toneSeconds: Double
            /// What `fault` did, and the tone's coverage in the recording (set with a fault).
            var struck: (at: Date, restored: Date)?
            var coverage: Gaps.Coverage?
        }

        static func password(_ ice: [String], _ policy: ICEServers.Policy, user: String = "sfubot-test", password: String = "correct-horse") throws -> ICEServers {
            ICEServers(servers: try ice.map { try ICEServer(parsing: $0) }, credential: .password(username: user, password: password), policy: policy)
        }

        /// `recorderICE`: the recorder's own servers (e.g. a wrong password), the player keeps `ice`'s.
        static func scene(_ name: String, auth: OwnCoturn.Auth, tls: ((URL) async throws -> OwnCoturn.TLS)? = nil, recordFor: Duration = recordFor,
                          recorderICE: ((OwnCoturn) throws -> ICEServers)? = nil, joinTimeout: Duration = .seconds(30),
                          fault: ((OwnCoturn) async throws -> (at: Date, restored: Date))? = nil,
                          ice: @escaping (OwnCoturn) throws -> ICEServers) async throws -> Outcome {
            let dir = try Scene.tempDirectory("turn-\(name)")
            return try await OwnJanus.with(port: 8221, in: dir, rtpPorts: janusRTP) { janus in
                try await OwnCoturn.with(port: 3478, relayPorts: relayPorts, auth: auth, tls: try await tls?(dir), in: dir) { coturn in
                    let room = try await Scene.createPermanentRoom(janus.url)
                    let ring = KeyRing(current: .random())
                    let tone = try await Audio.tone(440, seconds: 6, in: dir)
                    let out = dir.appendingPathComponent("rec")
                    let servers = try ice(coturn), recorderServers = try recorderICE?(coturn) ?? servers
                    func config(_ display: String, _ servers: ICEServers) throws -> BotConfig {
                        var c = try Scene.config(room: room, display: display, protection: .e2ee(ring))
                        c.janusURL = janus.url
                        c.ice = servers
                        c.rejoinTimeout = .seconds(30)
                        c.joinTimeout = joinTimeout
                        return c
                    }
                    let recorderConfig = try config("9:Recorder", recorderServers), playerConfig = try config("4:Tone", servers)
                    let firewall = try await RelayOnlyFirewall(janusRTP: janusRTP, relayPorts: relayPorts, turnPort: coturn.port, tlsPort: coturn.tls?.port)
                    do {
                        let recorder = Task { () -> (any Error)? in
                            do { _ = try await Recorder(config: recorderConfig, directory: out, duration: recordFor).run() } catch { return error }
                            return nil
                        }
                        try? await Task.sleep(for: .seconds(1))
                        let player = Task { _ = try? await Player(config: playerConfig, file: tone.path, loop: true).run() }
                        let watchdog = Task {
                            try await Task.sleep(for: recordFor + .seconds(60))
                            recorder.cancel()
                        }
                        var struck: (at: Date, restored: Date)?
                        if let fault {
                            try await Task.sleep(for: .seconds(5))
                            struck = try await fault(coturn)
                        }
                        let recorderError = await recorder.value
                        watchdog.cancel()
                        player.cancel()
                        _ = await player.value
                        let counts = try await firewall.counts()
                        await firewall.remove()
                        let manifest = try RecordingManifest.read(from: out)
                        var frequency: Double?, seconds = 0.0
                        if let feed = manifest.feeds.first(where: { $0.userID == "4" && $0.kind == "audio" }) {
                            let samples = try await Audio.decode(out.appendingPathComponent(feed.file))
                            frequency = Audio.dominantFrequency(samples)
                            seconds = Double(samples.count) / 48000
                        }
                        let coverage = fault == nil ? nil : try await Gaps.measure(out, userID: "4")
                        return Outcome(manifest: manifest, recorderError: recorderError, firewall: counts, tone: frequency, toneSeconds: seconds,
                                       struck: struck, coverage: coverage)
                    } catch {
                        await firewall.remove()
                        throw error
                    }
                }
            }
        }

        static func report(_ name: String, _ o: Outcome) {
            print("turn \(name): pair \(o.manifest.candidatePair?.summary ?? "none"); firewall \(o.firewall); tone \(o.tone.map { String(format: "%.0f Hz", $0) } ?? "none") for \(String(format: "%.1f", o.toneSeconds)) s; \(o.manifest.gaps.count) gap(s) \(o.manifest.gaps.first.map { "(first: \($0.cause))" } ?? ""); recorder \(o.recorderError.map { "failed: \($0)" } ?? "returned")")
        }

        /// What every working relay run must show: the tone, over a relay pair, carried by coturn.
        static func checkRelayed(_ o: Outcome, turnOver transport: String) {
            #expect(o.recorderError == nil, "the recorder returned normally: \(o.recorderError.map { "\($0)" } ?? "")")
            let f = o.tone ?? 0
            #expect(abs(f - 440) <= 440 * 0.02, "the recording decodes to the tone: dominant \(f) Hz")
            #expect(o.toneSeconds >= 6, "tone recorded for \(o.toneSeconds) s of about 11")
            #expect(o.manifest.candidatePair?.local == "relay", "the manifest names a relay pair: \(o.manifest.candidatePair.map(\.summary) ?? "none")")
            // The player sends 50 packets a second: what was recorded, coturn carried to Janus.
            #expect(Double(o.firewall.relayed) >= 45 * o.toneSeconds, "packets coturn relayed to Janus: \(o.firewall.relayed) for \(o.toneSeconds) s of tone")
            // How the bots reached coturn (GStreamer 1.22's stats name no relay protocol).
            if transport == "tcp" {
                #expect(o.firewall.turnTCP > 100 && o.firewall.turnUDP == 0, "TURN over TCP only: \(o.firewall)")
            } else if transport == "udp" {
                #expect(o.firewall.turnUDP > 100 && o.firewall.turnTCP == 0, "TURN over UDP only: \(o.firewall)")
            }
        }

        @Test("relay policy, UDP to coturn (?transport=udp), static user: the tone is recorded, no packet tried Janus directly")
        func relayOverUDP() async throws {
            let o = try await Self.scene("relay-udp", auth: Self.user) { try Self.password([$0.url()], .relay) }
            Self.report("relay-udp", o)
            Self.checkRelayed(o, turnOver: "udp")
            #expect(o.firewall.directIn == 0 && o.firewall.directOut == 0,
                    "with relay policy no packet went between a bot and Janus's RTP ports directly: \(o.firewall)")
        }

        @Test("all policy, coturn REST credentials from a shared secret: direct paths fail at the firewall, the relay carries the tone")
        func allPolicyWithSharedSecret() async throws {
            let o = try await Self.scene("all-secret", auth: .sharedSecret("north-wind-42")) { coturn in
                ICEServers(servers: [try ICEServer(parsing: coturn.url())],
                           credential: .sharedSecret(TURNSharedSecret(secret: Array("north-wind-42".utf8), user: "rec")), policy: .all)
            }
            Self.report("all-secret", o)
            Self.checkRelayed(o, turnOver: "udp")
            #expect(o.firewall.directIn > 0, "with policy all the bots tried Janus directly, and the firewall dropped it: \(o.firewall)")
        }

        @Test("relay policy, TCP to coturn (turn:…?transport=tcp): the tone is recorded over a relay reached by TCP")
        func relayOverTCP() async throws {
            let o = try await Self.scene("relay-tcp", auth: Self.user) { try Self.password([$0.url(tcp: true)], .relay) }
            Self.report("relay-tcp", o)
            Self.checkRelayed(o, turnOver: "tcp")
            #expect(o.firewall.directIn == 0 && o.firewall.directOut == 0, "no direct packet: \(o.firewall)")
        }

        @Test("wrong TURN password: the recorder says TURN is the problem, in its gaps, within the join")
        func wrongPassword() async throws {
            let o = try await Self.scene("wrong", auth: Self.user, recordFor: .seconds(8),
                                         recorderICE: { try Self.password([$0.url()], .relay, password: "wrong") }) { try Self.password([$0.url()], .relay) }
            Self.report("wrong", o)
            #expect(o.manifest.feeds.allSatisfy { $0.frames.received == 0 }, "nothing reached the recorder without a relay")
            let cause = o.manifest.gaps.first?.cause ?? ""
            #expect(cause.contains("TURN"), "the manifest's gap names TURN: \(o.manifest.gaps.map { $0.cause })")
            if let gap = o.manifest.gaps.first {
                // ICE gathering with a refused allocation ends in well under a second; the
                // join itself takes a few. Generous: the machine is shared.
                #expect(gap.start.timeIntervalSince(o.manifest.started) < 6, "TURN's refusal is known \(gap.start.timeIntervalSince(o.manifest.started)) s after the start")
            }
            #expect(o.manifest.candidatePair == nil)
            // Backoff from 0.5 s doubling: a handful of attempts in 8 s, not one every 100 ms.
            #expect((1...8).contains(o.manifest.gaps.count), "\(o.manifest.gaps.count) gaps in 8 s")
        }

        @Test("a player with a wrong TURN password backs off: a few attempts in 10 s, its status names TURN")
        func playerBacksOff() async throws {
            let dir = try Scene.tempDirectory("turn-player-wrong")
            try await OwnJanus.with(port: 8221, in: dir, rtpPorts: Self.janusRTP) { janus in
                try await OwnCoturn.with(port: 3478, relayPorts: Self.relayPorts, auth: Self.user, in: dir) { coturn in
                    let room = try await Scene.createPermanentRoom(janus.url)
                    var config = try Scene.config(room: room, display: "4:Tone", protection: .e2ee(KeyRing(current: .random())))
                    config.janusURL = janus.url
                    config.ice = try Self.password([coturn.url()], .relay, password: "wrong")
                    let player = Player(config: config, file: try await Audio.tone(440, seconds: 3, in: dir).path, loop: true)
                    let run = Task { _ = try? await player.run() }
                    try await Task.sleep(for: .seconds(10))
                    let status = player.status.snapshot
                    run.cancel()
                    _ = await run.value
                    print("turn player-wrong: \(status.comebacks) comebacks in 10 s; last error: \(status.lastError ?? "none")")
                    #expect(status.lastError?.contains("TURN") == true, "\(status.lastError ?? "none")")
                    // 0.5 + 1 + 2 + 4 s of backoff fit in 10 s with the attempts: at most about 5.
                    #expect(status.comebacks <= 6, "\(status.comebacks) attempts in 10 s")
                }
            }
        }

        @Test("coturn SIGKILLed mid-call and back 2 s later: recorder and player come back through the relay; the gap is measured")
        func coturnKilled() async throws {
            let o = try await Self.scene("coturn-killed", auth: Self.user, recordFor: .seconds(30), fault: { coturn in
                let at = Date()
                try await coturn.kill9()
                try await Task.sleep(for: .seconds(2))
                try await coturn.restart()
                return (at, Date())
            }) { try Self.password([$0.url()], .relay) }
            Self.report("coturn-killed", o)
            let coverage = try #require(o.coverage), struck = try #require(o.struck)
            let end = o.manifest.started.addingTimeInterval(29)
            let back = coverage.resumed(atOrAfter: struck.restored)
            let gap = back.map { $0.timeIntervalSince(struck.restored) } ?? end.timeIntervalSince(struck.restored)
            print("turn coturn-killed: the tone was back \(String(format: "%.1f", gap)) s after coturn (down \(String(format: "%.1f", struck.restored.timeIntervalSince(struck.at))) s); longest hole after the kill \(String(format: "%.1f", coverage.longestHole(after: struck.at, until: end))) s; reconnection \(o.manifest.reconnection)")
            #expect(o.recorderError == nil, "the recorder lived through it: \(o.recorderError.map { "\($0)" } ?? "")")
            #expect(back != nil, "the tone came back after coturn did")
            // A relayed path dies with coturn's allocations: both bots notice the lost media
            // (4 s) and set up new PeerConnections with new allocations. 15 s: generous.
            #expect(gap <= 15, "the tone was back \(gap) s after coturn")
            #expect(o.manifest.candidatePair?.local == "relay", "still relayed afterwards")
            #expect(o.firewall.directIn == 0 && o.firewall.directOut == 0, "never direct, not even while coturn was away: \(o.firewall)")
            // The tone's publisher was in the room throughout: the recorder's gap cost their media (issue 39).
            #expect(o.manifest.errors.contains { $0.display == "4:Tone" && $0.error.contains("while the recorder was away") }, "\(o.manifest.errors.map(\.error))")
        }

        @Test("libnice speaks no TLS to a turns: server: its first bytes there are a TURN Allocate in the clear (why sfubot does the TLS itself)")
        func turnsIsPlaintext() async throws {
            let port: UInt16 = 5350
            let first = Task.detached { Self.firstBytes(listeningOn: port, within: 10) }
            try await Task.sleep(for: .milliseconds(200))
            let pipeline = try Pipeline(description: "webrtcbin name=w")
            let webrtc = try WebRTCBin(pipeline.element(named: "w"))
            try webrtc.addTurnServer("turns://u:p@127.0.0.1:\(port)")
            try pipeline.setState(.playing)
            try webrtc.addTransceiver(.receiveOnly, caps: "application/x-rtp,media=audio,encoding-name=OPUS,payload=96,clock-rate=48000")
            try await webrtc.setLocalDescription(try await webrtc.createOffer())
            let bytes = await first.value
            await pipeline.stop()
            print("turns: first bytes from libnice: \(bytes.map { String(format: "%02x", $0) }.joined())")
            #expect(!bytes.isEmpty, "webrtcbin connected to the turns: server")
            #expect(bytes.first != 0x16, "a TLS ClientHello would start with 0x16")
            // STUN message type 0x0003 (Allocate request) with the magic cookie at bytes 4-7.
            #expect(bytes.starts(with: [0x00, 0x03]) && bytes.dropFirst(4).starts(with: [0x21, 0x12, 0xa4, 0x42]), "a TURN Allocate in the clear")
        }

        /// Accepts one TCP connection on 127.0.0.1:`port` and returns its first bytes (empty if
        /// none came within `seconds`). Blocks: run it off the cooperative pool.
        static func firstBytes(listeningOn port: UInt16, within seconds: Int32) -> [UInt8] {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { return [] }
            defer { close(fd) }
            var one: Int32 = 1
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_port = port.bigEndian
            addr.sin_addr.s_addr = inet_addr("127.0.0.1")
            let bound = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
            guard bound == 0, listen(fd, 1) == 0 else { return [] }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, seconds * 1000) == 1 else { return [] }
            let client = accept(fd, nil, nil)
            guard client >= 0 else { return [] }
            defer { close(client) }
            var c = pollfd(fd: client, events: Int16(POLLIN), revents: 0)
            guard poll(&c, 1, seconds * 1000) == 1 else { return [] }
            var buffer = [UInt8](repeating: 0, count: 64)
            let n = read(client, &buffer, buffer.count)
            return n > 0 ? Array(buffer[..<n]) : []
        }
    }
}
