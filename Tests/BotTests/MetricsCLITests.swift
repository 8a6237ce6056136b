import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import TestSupport

/// `--metrics-port` on the built binary against the real Janus: what a Prometheus scraper sees.
extension MediaScene {
@Suite struct MetricsCLITests {
    typealias CLI = CLITests
    let key = String(repeating: "cd", count: 32)

    /// GET /metrics, or nil if it does not answer 200.
    static func scrape(_ port: Int) async -> String? {
        guard let (data, response) = try? await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(port)/metrics")!),
              (response as? HTTPURLResponse)?.statusCode == 200 else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    @Test("sfubot record --metrics-port serves sfubot_frames_opened_total > 0 while it records")
    func recordServesFrameCounters() async throws {
        let room = try await Scene.createRoom()
        let dir = try Scene.tempDirectory("metrics")
        let tone = try await Audio.tone(440, seconds: 30, in: dir)
        // A port free a moment ago (the listener closes when it goes).
        let port = try SilentListener().port
        let recorder = try CLI.start(["record", "--janus", Scene.janusURL!, "--room", "\(room)", "--key-hex", key,
                                      "--out", dir.appendingPathComponent("rec").path, "--metrics-port", "\(port)"])
        defer { if recorder.isRunning { recorder.signal(SIGKILL) } }
        // Listening before it joins: the endpoint is there at once, frames or not.
        var text: String?
        for _ in 0..<100 where text == nil {
            text = await Self.scrape(port)
            if text == nil { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(text != nil, "no /metrics on \(port) within 10 s")
        let player = try CLI.start(["play", tone.path, "--janus", Scene.janusURL!, "--room", "\(room)", "--key-hex", key, "--display", "5:Metered"])
        defer { if player.isRunning { player.signal(SIGKILL) } }
        // Generous: a shared 2-core machine takes a few seconds to get media flowing.
        var opened = 0.0, written = 0.0
        let deadline = ContinuousClock.now + .seconds(40)
        while ContinuousClock.now < deadline, opened < 50 || written == 0 {
            try await Task.sleep(for: .milliseconds(500))
            text = await Self.scrape(port) ?? text
            opened = text.flatMap { PrometheusText.value(#"sfubot_frames_opened_total{kind="audio",format="ecall"}"#, in: $0) } ?? 0
            written = text.flatMap { PrometheusText.value("sfubot_bytes_written_total", in: $0) } ?? 0
        }
        #expect(opened > 0, "\(text ?? "")")
        #expect(written > 0, "the opened frames reached the file: \(text ?? "")")
        #expect(PrometheusText.value(#"sfubot_decrypt_failures_total{reason="no_key_opens",format="ecall"}"#, in: text ?? "") ?? 0 == 0, "\(text ?? "")")
        #expect(recorder.isRunning, "still recording while scraped")
        player.signal(SIGTERM)
        _ = await player.exit(within: .seconds(30))
        // The metrics server must not take the signal from the command (it once did: the
        // recorder never stopped).
        recorder.signal(SIGTERM)
        let status = await recorder.exit(within: .seconds(45))
        #expect(status == 0, "SIGTERM stops the recorder cleanly while it serves metrics")
    }
}
}
