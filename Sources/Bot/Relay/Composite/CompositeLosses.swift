import CoreMetrics
import Foundation
import Locking
import Synchronization

/// What the composite lost on its own, counted where it happens (the metrics in
/// docs/relay.md): participants' audio the mixer dropped because it came later than the
/// mixer's latency (a starved machine), and pictures the composite did not make at its rate
/// (the compositor or x264 behind). The first is a loss: the speech is not in the stream, and
/// the relay ends incomplete. The second is a lower frame rate, said but not a loss: every
/// picture sent shows the room as it was then.
final class CompositeLosses: Sendable {
    /// Running totals of dropped samples by audiomixer pad (each QoS message carries its pad's
    /// total), for the pads of participants' slots only.
    private let lateSamples = Locked<[String: UInt64]>([:])
    private let pictures = Locked(PictureCount())
    private let fps: Int
    private let lateAudioSeconds = FloatingPointCounter(label: "sfubot_relay_composite_late_audio_seconds_total")
    private let missingPictures = CoreMetrics.Counter(label: "sfubot_relay_frames_total", dimensions: [("kind", "video"), ("result", "not_composed")])

    private struct PictureCount {
        var first: ContinuousClock.Instant?
        var made = 0
        var counted = 0
    }

    init(fps: Int) { self.fps = fps }

    /// A participant's audio pad of the mixer: its QoS messages count from now on.
    func watch(audioPad name: String) { lateSamples.withLock { $0[name] = $0[name] ?? 0 } }

    /// A QoS message: counted if it is a slot's audio pad's (samples at 48 kHz).
    func qos(source: String, dropped: UInt64) {
        let added: UInt64 = lateSamples.withLock { totals in
            guard let before = totals[source], dropped > before else { return 0 }
            totals[source] = dropped
            return dropped - before
        }
        if added > 0 { lateAudioSeconds.increment(by: Double(added) / 48_000) }
    }

    /// One encoded picture (the encoder's output, on its streaming thread).
    func madePicture() {
        pictures.withLock { p in
            if p.first == nil { p.first = .now }
            p.made += 1
        }
    }

    /// The participants' audio dropped as late, in milliseconds.
    var lateAudioMilliseconds: Int { lateSamples.withLock { Int($0.values.reduce(0, +) / 48) } }

    /// Pictures the rate asked for since the first and that were not made; the metric moves by
    /// what is new since the last call.
    func picturesMissing(now: ContinuousClock.Instant = .now) -> (missing: Int, expected: Int) {
        let (missing, expected, added): (Int, Int, Int) = pictures.withLock { p in
            guard let first = p.first else { return (0, 0, 0) }
            let expected = Int(((now - first) / .seconds(1)) * Double(fps)) + 1
            let missing = max(0, expected - p.made)
            defer { p.counted = max(p.counted, missing) }
            return (missing, expected, max(0, missing - p.counted))
        }
        if added > 0 { missingPictures.increment(by: Int64(added)) }
        return (missing, expected)
    }
}
