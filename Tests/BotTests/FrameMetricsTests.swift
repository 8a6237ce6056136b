@testable import Bot
import CoreMetrics
import FrameCrypto
import GStreamerKit
import Prometheus
import Telemetry
import Testing
import TestSupport

/// The frame counters through the real Sealer and Opener, scraped as Prometheus text. No
/// Janus, no pipeline: the transforms are what the pad probes run on every frame.
@Suite struct FrameMetricsTests {

    @Test("sealed and opened frames move sfubot_frames_sealed/opened_total; a wrong key moves decrypt failures no_key_opens")
    func countsSealedOpenedAndFailures() throws {
        // A registry of this test's own: exact counts, whatever else runs in the process.
        let registry = PrometheusCollectorRegistry()
        let factory = PrometheusMetricsFactory(registry: registry)
        let ring = KeyRing(current: .random())
        let sealer = Sealer<AudioFormat>(ring: ring, stats: FrameStats(), metrics: FrameMetrics(kind: AudioFormat.kind, format: "ecall", factory: factory))
        let opener = Opener(ring: ring, AudioFormat.self, stats: FrameStats(), times: FrameTimes(),
                                         metrics: FrameMetrics(kind: AudioFormat.kind, format: "ecall", factory: factory))
        let stranger = Opener(ring: KeyRing(current: .random()), AudioFormat.self, stats: FrameStats(), times: FrameTimes(),
                                           metrics: FrameMetrics(kind: AudioFormat.kind, format: "ecall", factory: factory))
        let frame = (0..<80).map { UInt8($0) }
        var last: [UInt8] = []
        for _ in 0..<5 {
            last = try #require(sealer.run(frame))
            #expect(opener.run(last) == frame)
        }
        #expect(stranger.run(last) == nil, "another call's key opens nothing")
        #expect(opener.run([0x00, 1, 2, 3]) == nil, "no ECall marker")

        let text = Telemetry.render(registry)
        #expect(PrometheusText.value(#"sfubot_frames_sealed_total{kind="audio",format="ecall"}"#, in: text) == 5, "\(text)")
        #expect(PrometheusText.value(#"sfubot_frames_opened_total{kind="audio",format="ecall"}"#, in: text) == 5, "\(text)")
        #expect(PrometheusText.value(#"sfubot_decrypt_failures_total{reason="no_key_opens",format="ecall"}"#, in: text) == 1, "\(text)")
        #expect(PrometheusText.value(#"sfubot_decrypt_failures_total{reason="no_marker",format="ecall"}"#, in: text) == 1, "\(text)")
        #expect(PrometheusText.value(#"sfubot_seal_failures_total{kind="audio",format="ecall"}"#, in: text) == 0, "\(text)")
        #expect(text.contains("# TYPE sfubot_frames_opened_total counter"), "\(text)")
    }

    @Test("with no key to seal with, the frame is dropped and sfubot_seal_failures_total moves")
    func countsSealFailures() throws {
        let registry = PrometheusCollectorRegistry()
        let sealer = Sealer<VideoFormat>(ring: KeyRing(), stats: FrameStats(),
                                         metrics: FrameMetrics(kind: VideoFormat.kind, format: "ecall", factory: PrometheusMetricsFactory(registry: registry)))
        #expect(sealer.run([0, 0, 0, 2, 0x65, 0x88]) == nil)
        let text = Telemetry.render(registry)
        #expect(PrometheusText.value(#"sfubot_seal_failures_total{kind="video",format="ecall"}"#, in: text) == 1, "\(text)")
        #expect(PrometheusText.value(#"sfubot_frames_sealed_total{kind="video",format="ecall"}"#, in: text) == 0, "\(text)")
    }

    @Test("Telemetry.bootstrap is idempotent, and a sealer made after it counts in the process's registry")
    func bootstrapFeedsTheProcessRegistry() throws {
        let registry = Telemetry.bootstrap()
        #expect(Telemetry.bootstrap() === registry)
        let series = #"sfubot_frames_sealed_total{kind="audio",format="ecall"}"#
        let before = PrometheusText.value(series, in: Telemetry.render(registry)) ?? 0
        // The default metrics: what attachSender gives every stream.
        let sealer = Sealer<AudioFormat>(ring: KeyRing(current: .random()), stats: FrameStats())
        for _ in 0..<3 { _ = try #require(sealer.run([1, 2, 3, 4])) }
        let after = try #require(PrometheusText.value(series, in: Telemetry.render(registry)))
        // Other tests in this process may seal meanwhile: at least ours.
        #expect(after - before >= 3)
    }

    @Test("a PQSRTC (FrameCryptor) stream counts under format=\"framecryptor\", not ECall's series")
    func indexedFormatsCountUnderTheirName() throws {
        let registry = Telemetry.bootstrap()
        let series = #"sfubot_frames_sealed_total{kind="audio",format="framecryptor"}"#
        let before = PrometheusText.value(series, in: Telemetry.render(registry)) ?? 0
        let store = FrameKeyStore(format: FrameCryptorFormat(options: .pqsrtc))
        try store.set(participant: "alice", index: 0, material: try KeyMaterial((0..<32).map { UInt8($0) }))
        let sealer = store.sealer(kind: .audio, participant: "alice", index: SealingIndex(0), stats: FrameStats())
        let sealed = (0..<3).compactMap { _ in sealer.run([0xF8, 1, 2, 3]) }
        #expect(sealed.count == 3)
        let after = try #require(PrometheusText.value(series, in: Telemetry.render(registry)), "\(Telemetry.render(registry))")
        #expect(after - before >= 3)
    }
}
