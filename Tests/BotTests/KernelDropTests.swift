import Foundation
import Testing
import TestSupport

extension MediaScene {
    /// Packets the kernel dropped on the recorder's media socket and that no retransmission
    /// repaired are frames missing from the files: a loss (issue 42 item 5), in the manifest,
    /// the exit code and the metric, not only a `receive_drops` count.
    @Suite struct KernelDropTests {
        @Test("a recorder with a tiny receive buffer stopped (SIGSTOP) for 3 s mid-call: the kernel drops, the jitter buffers give up, the manifest names the loss, exit 74, sfubot_recording_losses_total moved")
        func starvedRecorderReportsTheLoss() async throws {
            let dir = try Scene.tempDirectory("kernel-drops")
            let source = try await RelayCase.source(in: dir, seconds: 20)
            let room = try await Scene.createRoom()
            let publisher = try RelayCase.publisher(source, room: room)
            defer { publisher.signal(SIGKILL) }
            let out = dir.appendingPathComponent("rec")
            let metricsPort = try RelayServers.freePort()
            let recorder = try SfubotProcess.start(["record", "--janus", Scene.janusURL!, "--room", "\(room)", "--key-hex", RelayCase.key,
                                                    "--out", out.path, "--duration", "14", "--receive-buffer", "2048",
                                                    "--metrics-port", "\(metricsPort)"])
            try await Task.sleep(for: .seconds(5))
            recorder.signal(SIGSTOP)
            try await Task.sleep(for: .seconds(3))
            recorder.signal(SIGCONT)
            // Once the jitter buffers have given up on what did not come back.
            var metrics = ""
            _ = await eventually(within: 8) {
                metrics = await MetricsCLITests.scrape(metricsPort) ?? ""
                return Self.value("sfubot_recording_losses_total", in: metrics) >= 1
            }
            let ran = await recorder.finished()

            #expect(Self.value("sfubot_receive_drops_total", in: metrics) > 0, "the kernel dropped packets: \(metrics.split(separator: "\n").filter { $0.contains("drops") })")
            #expect(Self.value("sfubot_recording_losses_total", in: metrics) >= 1, "the loss counted")
            #expect(ran.status == 74, "a loss is exit 74, got \(ran.status): \(ran.errText.suffix(1500))")
            let manifest = try RecordingManifestFile.json(out)
            let drops = manifest["receive_drops"] as? Int ?? 0
            let errors = (manifest["errors"] as? [[String: Any]] ?? []).compactMap { $0["error"] as? String }
            #expect(drops > 0 && errors.contains { $0.contains("never arrived, not repaired by retransmission") }, "receive_drops \(drops), errors \(errors)")
            print("kernel drops: \(drops) packets dropped; \(errors.first ?? "no error")")
        }

        /// The sum of a Prometheus counter's samples.
        static func value(_ name: String, in text: String) -> Double {
            text.split(separator: "\n").filter { $0.hasPrefix(name) && !$0.hasPrefix("#") }
                .compactMap { $0.split(separator: " ").last.flatMap { Double($0) } }.reduce(0, +)
        }
    }
}

/// A recording folder's manifest.json as a dictionary.
enum RecordingManifestFile {
    static func json(_ folder: URL) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: folder.appendingPathComponent("manifest.json"))) as? [String: Any])
    }
}
