import Bot
import FrameCrypto
import Foundation
import Janus
import LoadTest
import Testing
import TestSupport

extension MediaScene {
/// `sfubot load --chaos` against the real Janus: 2 publishers and 2 subscribers held 15 s while
/// one kind of fault fires a few times. Every fault must heal, with a plausible time from the
/// fault to the first decrypted frame, and no frame may fail to decrypt.
@Suite struct LoadChaosTests {
    static func run(_ chaos: ChaosPlan, name: String) async throws -> (LoadSummary, [BotRecord]) {
        var plan = try LoadRunTests.plan(room: try await Scene.createRoom(), publishers: 2, subscribers: 2,
                                         ring: KeyRing(current: .random()), seconds: 15)
        plan.chaos = chaos
        plan.rejoinTimeout = .seconds(15)
        // As the CLI does: a dropped WebSocket is first reconnected and the session claimed.
        // This Janus keeps no session after its WebSocket closed (reclaim_session_timeout 0),
        // so the claim is refused and the bot rejoins on a new session.
        plan.janus.reclaimWindow = .seconds(15)
        let dir = try Scene.tempDirectory("load-chaos-\(name)")
        let result = try await LoadRun(plan: plan).run()
        let summary = try await LoadReport.write(result, to: dir)
        let html = try String(contentsOf: dir.appendingPathComponent("report.html"), encoding: .utf8)
        #expect(html.contains("Chaos \(name)"))
        return (summary, result.bots)
    }

    /// What every chaos run must show: faults happened and all healed in `bound` seconds,
    /// every bot is still in, nothing failed to decrypt.
    static func expectHealed(_ s: LoadSummary, _ bots: [BotRecord], kind: String, bound: Double) throws -> LoadSummary.ChaosKind {
        let k = try #require(s.chaos?[kind])
        #expect(k.count >= 2, "\(kind): only \(k.count) fault(s) fired")
        #expect(k.recovered == k.count && k.notRecovered.isEmpty, "\(kind) not recovered: \(k.notRecovered)")
        let d = try #require(k.seconds)
        #expect(d.min >= 0 && d.max < bound, "\(kind): fault → first decrypted frame \(d)")
        #expect(bots.allSatisfy { $0.state == .joined }, "\(bots.map { "\($0.display): \($0.state) \($0.error ?? "")" })")
        #expect(s.comebacks.notBack.isEmpty, "\(s.comebacks.notBack)")
        #expect(s.subscribers.decryptFailuresTotal == 0, "decrypt failures: \(s.subscribers.decryptFailures)")
        #expect(s.held, "\(s.problems)")
        print("chaos \(kind): \(k.count) faults; seconds min \(d.min) p50 \(d.p50) p95 \(d.p95) max \(d.max); comebacks \(s.comebacks)")
        return k
    }

    @Test("ws-drop: each dropped WebSocket ends in a comeback (claim or rejoin) and decrypted frames again within 5 s")
    func wsDrop() async throws {
        let (s, bots) = try await Self.run(ChaosPlan(perMinute: [.wsDrop: 4]), name: "ws-drop")
        let k = try Self.expectHealed(s, bots, kind: "ws-drop", bound: 5)
        // Every drop is seen by the session, and each came back by a claim or a rejoin.
        #expect(s.comebacks.connectionDrops >= k.count)
        #expect(s.comebacks.claims + s.comebacks.rejoins >= k.count, "\(s.comebacks)")
    }

    @Test("ice-restart: each replaced PeerConnection decrypts again within 5 s, on the same session")
    func iceRestart() async throws {
        let (s, bots) = try await Self.run(ChaosPlan(perMinute: [.iceRestart: 4]), name: "ice-restart")
        let k = try Self.expectHealed(s, bots, kind: "ice-restart", bound: 5)
        #expect(s.comebacks.mediaRestarts >= k.count && s.comebacks.rejoins == 0, "\(s.comebacks)")
        // A media restart loses media for a moment: its gap is counted.
        #expect(s.comebacks.gapSeconds > 0)
    }

    @Test("key-rotation: every subscriber decrypts under the new key within 1 s of the switch, no frame fails")
    func keyRotation() async throws {
        let (s, bots) = try await Self.run(ChaosPlan(perMinute: [.keyRotation: 12]), name: "key-rotation")
        _ = try Self.expectHealed(s, bots, kind: "key-rotation", bound: 1)
        // Rotations lose nothing: no bot went away.
        #expect(s.comebacks.rejoins + s.comebacks.mediaRestarts + s.comebacks.connectionDrops == 0)
    }

    @Test("--chaos parses kinds and rates per minute, and refuses nonsense")
    func parsing() throws {
        let p = try ChaosPlan(parsing: "ws-drop=2, ice-restart=0.5,key-rotation=1")
        #expect(p.rate(.wsDrop) == 2 && p.rate(.iceRestart) == 0.5 && p.rate(.keyRotation) == 1)
        #expect(p.kinds == [.iceRestart, .keyRotation, .wsDrop].sorted { ChaosPlan.Kind.allCases.firstIndex(of: $0)! < ChaosPlan.Kind.allCases.firstIndex(of: $1)! })
        for bad in ["", "ws-drop", "ws-drop=x", "ws-drop=-1", "wsdrop=1", "ws-drop=1,ws-drop=2", "ice-restart=1e9"] {
            #expect(throws: ChaosPlan.ParseError.self, "\(bad)") { try ChaosPlan(parsing: bad) }
        }
    }
}
}
