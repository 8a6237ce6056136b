public import FrameCrypto
import Foundation

/// `sfubot relay`: one participant of a room, decrypted, out to a live destination
/// (`RelayDestination`): RTMP, SRT or plain RTP. H.264 goes out as it was sent; Opus as it
/// was sent over RTP, as AAC in FLV and MPEG-TS.
///
/// Only frames that opened leave the process: with E2EE on, a frame that does not open is
/// dropped and counted, never forwarded sealed. The destination failing never ends the relay:
/// it is tried again with backoff while the relay stays in the call (`RelayOutput`). The
/// participant leaving and coming back (the same user id) goes on in the same stream.
public struct Relay: Sendable {
    public let config: BotConfig
    public let destination: RelayDestination
    /// The participant: a feed id, or the user id of an ECall display (`<userId>:<Name>`).
    public let participant: String
    public let duration: Duration?
    public let status = RelayStatus()
    /// Pause and resume (serve's relay jobs): frames held back while paused, the stream open.
    public var pauses = RecordingPauses()

    public init(config: BotConfig, destination: RelayDestination, participant: String, duration: Duration? = nil) {
        self.config = config
        self.destination = destination
        self.participant = participant
        self.duration = duration
    }

    /// What a relay did, for its last lines.
    public struct Report: Sendable {
        public var audio: FrameStats.Snapshot
        public var video: FrameStats.Snapshot
        public var audioSent: Int
        public var videoSent: Int
        /// Opened frames that came while the destination was down.
        public var unsent: Int
        /// Opened video before an output's first keyframe.
        public var beforeKeyFrame: Int
        /// Opened frames held back while paused.
        public var paused: Int
        /// Outputs started, and destination failures.
        public var attempts: Int
        public var failures: Int
        /// Whether the participant was found in the room at all.
        public var participantSeen: Bool
        /// Times it lost Janus and was back in the room.
        public var rejoins: Int
        /// How long the output graph held what it was handed (nil: nothing reached a sink).
        public var outputDelay: RelayDelays.Summary?
        /// Handed to an output and dropped there (the destination slower than the stream).
        public var droppedInOutput: Int

        /// What the destination did not get of what opened, or nil: frames that came while it
        /// was down (once it had failed: before, they are its start), or dropped in the output.
        public var incomplete: String? { RelayLosses.describe(unsent: unsent, failures: failures, droppedInOutput: droppedInOutput) }
    }

    /// Relays until `duration` elapses, the task is cancelled, or the room is destroyed; then
    /// ends the stream cleanly and leaves.
    public func run() async throws(BotError) -> Report {
        try await config.withTLSBridges { config throws(BotError) in
            let room = RelayRoom(config: config, target: .destination(destination), participant: participant, status: status, pauses: pauses)
            return try await room.run(for: duration)
        }
    }
}
