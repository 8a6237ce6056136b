import Bot
import FrameCrypto
import Foundation
import Logging
import Testing

/// Media graphs that could leak plaintext are refused before anything is sent.
@Suite struct FailClosedTests {
    @Test func videoBranchWithoutSealerIsRefused() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sfubot-failclosed-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        for name in try FileManager.default.contentsOfDirectory(atPath: "pipelines") {
            var text = try String(contentsOfFile: "pipelines/\(name)", encoding: .utf8)
            if name == "play-test-pattern.pipeline" { text = text.replacingOccurrences(of: "identity name=vseal", with: "identity name=renamed") }
            try text.write(to: dir.appendingPathComponent(name), atomically: true, encoding: .utf8)
        }
        let config = BotConfig(janusURL: "ws://127.0.0.1:1", room: 1, display: "1:x", protection: .e2ee(KeyRing(current: .random())),
                               pipelines: try PipelineLibrary(directory: dir.path), logger: Logger(label: "test"))
        await #expect {
            // Refused while the pipeline is built; --duration only bounds a run that wrongly starts
            // (1 s, then 30 s, were shorter than building it under ThreadSanitizer on a loaded
            // machine). A run that wrongly starts fails anyway: its Janus is a closed port.
            _ = try await Player(config: config, source: .testPattern, duration: .seconds(300)).run()
        } throws: { error in
            String(describing: error).contains("'vseal'")
        }
    }
}
