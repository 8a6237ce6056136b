import Bot
import FrameCrypto
import Foundation
import LoadTest
import Testing
import TestSupport

extension MediaScene {
    /// Issue 28: `sfubot load` through a TURN relay (Debian's coturn, started by the test) with
    /// `--ice-transport-policy relay`, while a firewall drops UDP between the bots and Janus's
    /// RTP ports unless it comes from or goes to coturn's relay ports (`RelayOnlyFirewall`).
    /// Janus (8224, RTP 13400-13499) and coturn (3482, relay ports 14400-14499) of its own.
    @Suite struct LoadTURNTests {
        static let janusRTP = 13400...13499
        static let relayPorts = 14400...14499

        // Direct paths: libnice frames the direct sender's packets for the relay
        // (nice_agent_send), and the receive shortcut sits after nicesrc, which unwraps them.
        // webrtcbin's paths: its RTCP sender reports give the publishers' RTT through the relay.
        @Test("3 publishers × 3 subscribers through coturn, relay policy, UDP to Janus firewalled: every bot relayed on an allocation of its own, no direct packet, every frame decrypts",
              arguments: zip(LoadPlan.SendPath.allCases, LoadPlan.ReceivePath.allCases))
        func relayedLoad(sendPath: LoadPlan.SendPath, receivePath: LoadPlan.ReceivePath) async throws {
            let dir = try Scene.tempDirectory("load-turn")
            try await OwnJanus.with(port: 8224, in: dir, rtpPorts: Self.janusRTP) { janus in
                try await OwnCoturn.with(port: 3482, relayPorts: Self.relayPorts, auth: .user("sfubot-load", password: "load-relay-pw"), in: dir) { coturn in
                    var plan = try LoadRunTests.plan(room: try await Scene.createPermanentRoom(janus.url), publishers: 3, subscribers: 3,
                                                     ring: KeyRing(current: .random()), seconds: 10)
                    plan.janusURL = janus.url
                    plan.sendPath = sendPath
                    plan.receivePath = receivePath
                    plan.ice = ICEServers(servers: [try ICEServer(parsing: coturn.url())],
                                          credential: .password(username: "sfubot-load", password: "load-relay-pw"), policy: .relay)
                    let firewall = try await RelayOnlyFirewall(janusRTP: Self.janusRTP, relayPorts: Self.relayPorts, turnPort: coturn.port)
                    let result: LoadResult, counts: RelayOnlyFirewall.Counts, allocations: Int
                    do {
                        let planned = plan
                        let run = Task { try await LoadRun(plan: planned).run() }
                        // Every bot is in by then (ramp 20/s): count coturn's relay sockets.
                        try await Task.sleep(for: .seconds(8))
                        allocations = try await Self.relaySockets()
                        result = try await run.value
                        counts = try await firewall.counts()
                    } catch {
                        await firewall.remove()
                        throw error
                    }
                    await firewall.remove()
                    _ = try await LoadReport.write(result, to: dir)
                    let summary = LoadSummary(result)
                    let ice = try #require(summary.ice, "the report names the selected pairs")
                    print("load turn \(sendPath.rawValue)/\(receivePath.rawValue): \(ice.line); firewall \(counts); \(allocations) relay sockets at coturn; "
                          + "\(summary.subscribers.framesOpened) frames decrypted, \(summary.subscribers.decryptFailuresTotal) failed; problems \(summary.problems)")
                    #expect(summary.held, "problems: \(summary.problems)")
                    #expect(ice.bots == 6 && ice.relayed == 6 && ice.relayedShare == 1, "every bot relayed: \(ice.pairs)")
                    // Each bot's webrtcbin has its own ICE agent and so its own allocation; a
                    // shared one would mix bots' SRTP streams at coturn.
                    #expect(allocations >= 6, "\(allocations) relay sockets at coturn for 6 bots")
                    #expect(counts.directIn == 0 && counts.directOut == 0, "no packet went between a bot and Janus's RTP ports directly: \(counts)")
                    #expect(counts.relayed > 3 * 50 * 5, "coturn carried the publishers' media to Janus: \(counts)")
                    #expect(summary.subscribers.decryptFailuresTotal == 0 && summary.subscribers.framesOpened > 3 * 3 * 50 * 5,
                            "frames decrypted \(summary.subscribers.framesOpened), failed \(summary.subscribers.decryptFailuresTotal)")
                    let process = try #require(summary.process.first)
                    #expect(process.directFallbacks == 0, "the direct path took the relay, it did not fall back")
                    if sendPath == .direct {
                        #expect(ice.directPacketsSent > 3 * 50 * 5 && ice.directPacketsThroughAgent == ice.directPacketsSent,
                                "every direct packet went through libnice's TURN framing: \(ice.directPacketsThroughAgent) of \(ice.directPacketsSent)")
                    } else {
                        #expect(ice.rttRelayedMs != nil, "webrtcbin's RTCP gives the publishers' RTT through the relay")
                    }
                    if receivePath == .direct {
                        #expect((process.receivedPastQueue ?? 0) > 3 * 3 * 50 * 5, "relayed packets went past the receive queue: \(process.receivedPastQueue ?? -1)")
                    }
                }
            }
        }

        /// UDP sockets bound to coturn's relay ports: one per allocation.
        static func relaySockets() async throws -> Int {
            let run = try await ChildProcess.run("/usr/bin/ss", ["-Huan"])
            return run.outText.split(whereSeparator: \.isNewline).filter { line in
                let local = line.split(whereSeparator: \.isWhitespace).dropFirst(3).first ?? ""
                return local.split(separator: ":").last.flatMap { Int($0) }.map(relayPorts.contains) ?? false
            }.count
        }
    }
}
