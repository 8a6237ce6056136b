import Bot
import FrameCrypto
import Foundation
import LoadTest
import Testing
import TestSupport

extension MediaScene {
@Suite struct LoadPerSenderTests {
    /// `load --per-sender-keys`: each publisher seals with its own key and the subscribers hold
    /// only the map (not the call key), so a publisher using any other key would fail to open.
    @Test("3 publishers with their own keys × 2 subscribers holding the map: every frame of every publisher opens")
    func perSenderKeys() async throws {
        let dir = try Scene.tempDirectory("load-persender")
        let map = KeyMap.derived(from: .random(), senders: (0..<3).map(LoadPlan.senderID))
        var plan = LoadPlan(janusURL: Scene.janusURL!, room: try await Scene.createRoom(), publishers: 3, subscribers: 2,
                            protection: .perSender(map), library: try PipelineLibrary(), logger: Scene.logger)
        plan.duration = .seconds(5)
        plan.ramp = 20
        plan.statsInterval = .seconds(1)
        let result = try await LoadRun(plan: plan).run()
        _ = try await LoadReport.write(result, to: dir)

        let summary = try LoadRunTests.summary(in: dir)
        #expect(summary["held"] as? Bool == true, "problems: \(summary["problems"] ?? "")")
        let rows = try LoadRunTests.rows(in: dir)
        for p in rows where p["role"] == "publisher" {
            #expect(p["display"]?.hasPrefix("p\(p["index"]!):") == true, "\(p["display"] ?? "")")
            #expect(Int(p["frames_sealed"]!)! > 150)
        }
        let subscribers = rows.filter { $0["role"] == "subscriber" }
        #expect(subscribers.count == 2)
        for s in subscribers {
            #expect(s["feeds_receiving"] == "3" && s["decrypt_failures"] == "0", "\(s)")
            #expect(Int(s["frames_opened"]!)! > 3 * 150, "subscriber \(s["index"]!): \(s["frames_opened"]!) frames opened")
        }
    }
}
}
