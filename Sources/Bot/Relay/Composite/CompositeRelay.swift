public import FrameCrypto
import Foundation

/// `sfubot relay --to rtmp|srt|hls` without `--participant`: the whole room, decrypted, in one
/// picture (a grid of everyone publishing video, or the active speaker) with everyone's audio
/// mixed, encoded once (H.264 constrained baseline, AAC) and sent to a live destination
/// (docs/relay.md, "The whole room").
///
/// Only frames that opened are decoded into the composite: with E2EE on, a frame that does not
/// open is dropped and counted. Nothing is sent before the first frame opened, so a wrong key
/// never connects to the destination. Joins, leaves, gaps, picture sizes and key rotations
/// change the picture, never the stream; the destination failing is retried with backoff as
/// for one participant (`RelayOutput`).
public struct CompositeRelay: Sendable {
    public let config: BotConfig
    public let destination: RelayDestination
    public let layout: CompositeLayout
    public let format: CompositeFormat
    public let duration: Duration?
    public let status = RelayStatus()
    /// Pause and resume: the composite held back while paused, the stream open.
    public var pauses = RecordingPauses()

    public init(config: BotConfig, destination: RelayDestination, layout: CompositeLayout = .grid, format: CompositeFormat = CompositeFormat(),
                duration: Duration? = nil) {
        self.config = config
        self.destination = destination
        self.layout = layout
        self.format = format
        self.duration = duration
    }

    /// What a composite relay did, for its last lines.
    public struct Report: Sendable {
        /// Every participant's frames received, opened and dropped, added up.
        public var audio: FrameStats.Snapshot
        public var video: FrameStats.Snapshot
        /// Participants given a place in the composite.
        public var participants: Int
        /// Mixed audio buffers (20 ms each) and encoded pictures handed to the output.
        public var audioSent: Int
        public var videoSent: Int
        /// Handed over while the destination was down, and held back while paused.
        public var unsent: Int
        /// Encoded pictures before an output's first keyframe (each try asks the encoder for one).
        public var beforeKeyFrame: Int
        public var paused: Int
        /// Outputs started, and destination failures.
        public var attempts: Int
        public var failures: Int
        /// Whether any frame opened (the output starts at the first).
        public var opened: Bool
        /// How often the speaker's frame went to someone else (`--layout speaker`).
        public var speakerChanges: Int
        public var rejoins: Int
        /// Participants' audio the mixer dropped for coming later than its latency (a starved
        /// machine): a loss. Pictures the rate asked for that were not made: a lower rate.
        public var lateAudioMilliseconds: Int
        public var picturesMissing: Int
        public var picturesExpected: Int
        /// Handed to the output and dropped there (the destination slower than the stream).
        public var droppedInOutput: Int

        /// Why the relay did not carry everything it opened, or nil: the destination down while
        /// frames were handed over, or audio the mixer dropped.
        public var incomplete: String? {
            RelayLosses.describe(unsent: unsent, failures: failures, droppedInOutput: droppedInOutput, lateAudioMilliseconds: lateAudioMilliseconds)
        }
    }

    /// Relays until `duration` elapses, the task is cancelled, or the room is destroyed; then
    /// ends the stream cleanly and leaves.
    public func run() async throws(BotError) -> Report {
        try await config.withTLSBridges { config throws(BotError) in
            try await CompositeRoom(self, config: config).run(for: duration)
        }
    }
}
