package import CoreMetrics
package import FrameCrypto

/// sfubot's counters (docs/architecture.md, "Metrics"), through swift-metrics' API only: the
/// command that runs the process picks the backend (Prometheus, `Telemetry.bootstrap`).
///
/// Rare events (rejoins, restarts, gaps) make their counter when they happen rather than
/// keep one in a static: a static made before the bootstrap would stay on the no-op handler
/// for the life of the process, and Prometheus hands back the same series for the same name.
package enum BotMetrics {
    /// A participant is back on a new Janus session.
    package static func rejoined() {
        CoreMetrics.Counter(label: "sfubot_rejoins_total").increment()
    }

    /// A PeerConnection was replaced on the same session (ICE failed, media lost).
    package static func mediaRestarted() {
        CoreMetrics.Counter(label: "sfubot_ice_restarts_total").increment()
    }

    /// A subscriber's PeerConnection could not answer Janus's offer and was replaced.
    package static func negotiationFailed() {
        CoreMetrics.Counter(label: "sfubot_negotiation_failures_total").increment()
    }

    /// A participant had no media for `seconds`, from the loss until it was back.
    package static func gap(seconds: Double) {
        CoreMetrics.Counter(label: "sfubot_gaps_total").increment()
        FloatingPointCounter(label: "sfubot_gap_seconds_total").increment(by: max(0, seconds))
    }

    /// The counter of recording bytes written; made once per file, bumped per buffer.
    /// A recording lost something: a file that does not hold what was written to it, a track or
    /// mix that stopped being written, a file that cannot be read back.
    package static func recordingLoss() {
        CoreMetrics.Counter(label: "sfubot_recording_losses_total").increment()
    }

    /// Packets the kernel dropped on a recorder's media socket (its receive buffer was full).
    package static func receiveDrops(_ packets: Int) {
        CoreMetrics.Counter(label: "sfubot_receive_drops_total").increment(by: packets)
    }

    package static func bytesWritten() -> BytesWritten {
        BytesWritten(counter: CoreMetrics.Counter(label: "sfubot_bytes_written_total"))
    }
}

/// `sfubot_bytes_written_total`, as the recorder's files see it (they need not import
/// swift-metrics, whose `Counter` would clash with the recorder's own).
package struct BytesWritten: Sendable {
    fileprivate let counter: CoreMetrics.Counter
    package func add(_ bytes: Int) { counter.increment(by: bytes) }
}

/// The frame counters of one stream, made when the stream's sealer or opener is attached and
/// bumped per frame (with Prometheus one relaxed atomic add each): never made per frame.
package struct FrameMetrics: Sendable {
    private let sealedCounter: CoreMetrics.Counter
    private let sealFailureCounter: CoreMetrics.Counter
    private let openedCounter: CoreMetrics.Counter
    private let noMarker: CoreMetrics.Counter
    private let tooShort: CoreMetrics.Counter
    private let noKey: CoreMetrics.Counter
    private let malformed: CoreMetrics.Counter
    private let missingKey: CoreMetrics.Counter
    private let unencrypted: CoreMetrics.Counter
    private let replayed: CoreMetrics.Counter

    /// `kind`: "audio" or "video". `format`: the frame format (`FrameFormatName`'s raw value, or
    /// "none" without E2EE), so a dashboard tells a PQSRTC room's failures from an ECall room's.
    /// `factory`: where the counters live (a test gives its own).
    package init(kind: String, format: String, factory: any MetricsFactory = MetricsSystem.factory) {
        let k = [("kind", kind), ("format", format)]
        sealedCounter = .init(label: "sfubot_frames_sealed_total", dimensions: k, factory: factory)
        sealFailureCounter = .init(label: "sfubot_seal_failures_total", dimensions: k, factory: factory)
        openedCounter = .init(label: "sfubot_frames_opened_total", dimensions: k, factory: factory)
        // Decrypt failures by reason only: the reason says what broke, whatever the medium.
        func failures(_ r: DropReason) -> CoreMetrics.Counter {
            .init(label: "sfubot_decrypt_failures_total", dimensions: [("reason", r.rawValue), ("format", format)], factory: factory)
        }
        noMarker = failures(.noMarker)
        tooShort = failures(.tooShort)
        noKey = failures(.noKey)
        malformed = failures(.malformed)
        missingKey = failures(.missingKey)
        unencrypted = failures(.unencrypted)
        replayed = failures(.replayed)
    }

    package func sealed() { sealedCounter.increment() }
    package func sealFailed() { sealFailureCounter.increment() }
    package func opened() { openedCounter.increment() }
    package func dropped(_ reason: DropReason) {
        switch reason {
        case .noMarker: noMarker.increment()
        case .tooShort: tooShort.increment()
        case .noKey: noKey.increment()
        case .malformed: malformed.increment()
        case .missingKey: missingKey.increment()
        case .unencrypted: unencrypted.increment()
        case .replayed: replayed.increment()
        }
    }
}

/// A relay's series, made with its output (after the bootstrap) and bumped per frame from the
/// streaming threads: frames by kind and what became of them, bytes handed to the output (its
/// bitrate), the destination's failures.
package struct RelayMetrics: Sendable {
    let audioSent = CoreMetrics.Counter(label: "sfubot_relay_frames_total", dimensions: [("kind", "audio"), ("result", "sent")])
    let videoSent = CoreMetrics.Counter(label: "sfubot_relay_frames_total", dimensions: [("kind", "video"), ("result", "sent")])
    /// Opened while no output was up (the destination down).
    let audioUnsent = CoreMetrics.Counter(label: "sfubot_relay_frames_total", dimensions: [("kind", "audio"), ("result", "unsent")])
    let videoUnsent = CoreMetrics.Counter(label: "sfubot_relay_frames_total", dimensions: [("kind", "video"), ("result", "unsent")])
    /// A speaker stream's consumer had no room for it (its send queue full).
    let audioDropped = CoreMetrics.Counter(label: "sfubot_relay_frames_total", dimensions: [("kind", "audio"), ("result", "dropped")])
    /// Taken by an output and dropped there: the destination slower than the stream.
    let audioDroppedInOutput = CoreMetrics.Counter(label: "sfubot_relay_frames_total", dimensions: [("kind", "audio"), ("result", "dropped_in_output")])
    let videoDroppedInOutput = CoreMetrics.Counter(label: "sfubot_relay_frames_total", dimensions: [("kind", "video"), ("result", "dropped_in_output")])
    /// Video before an output's first keyframe.
    let beforeKeyFrame = CoreMetrics.Counter(label: "sfubot_relay_frames_total", dimensions: [("kind", "video"), ("result", "before_keyframe")])
    /// Held back while the relay is paused.
    let paused = CoreMetrics.Counter(label: "sfubot_relay_frames_total", dimensions: [("kind", "any"), ("result", "paused")])
    let bytes = CoreMetrics.Counter(label: "sfubot_relay_bytes_total")
    let failures = CoreMetrics.Counter(label: "sfubot_relay_destination_failures_total")

    package init() {}
}
