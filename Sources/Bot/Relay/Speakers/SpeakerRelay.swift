public import FrameCrypto
import Foundation

/// `sfubot relay --to ws://…/{participant}`: each speaker's audio, opened, decoded and sent live
/// as PCM on a WebSocket connection of its own, for transcription (docs/relay.md, "Each
/// speaker's audio"). Everyone publishing audio, or the one `participant` names.
///
/// Only audio that opened is decoded: with E2EE on, a frame that does not open is dropped and
/// counted, never sent. A consumer that is down, closes or reads too slowly never holds up the
/// call or the other speakers: its PCM is counted as unsent or dropped.
public struct SpeakerRelay: Sendable {
    public let config: BotConfig
    public let destination: SpeakerStreamDestination
    public let audio: SpeakerStreamAudio
    public let participant: String?
    public let duration: Duration?
    /// Listen on the destination's address for consumers to connect (`--ws-listen`).
    public var listen = false
    public let status = RelayStatus()
    /// Pause and resume (serve's relay jobs): audio held back while paused, the connections open.
    public var pauses = RecordingPauses()

    public init(config: BotConfig, destination: SpeakerStreamDestination, audio: SpeakerStreamAudio = .pcm16k, participant: String? = nil,
                duration: Duration? = nil) {
        self.config = config
        self.destination = destination
        self.audio = audio
        self.participant = participant
        self.duration = duration
    }

    /// What the speaker streams carried, for the relay's last lines.
    public struct Report: Sendable {
        public var audio: FrameStats.Snapshot
        /// Participants given a stream, connections opened.
        public var speakers: Int
        public var connections: Int
        /// PCM messages queued on a connection, and their bytes.
        public var sent: Int
        public var bytes: Int
        /// PCM a slow consumer had no room for, and PCM decoded while its connection was down.
        public var dropped: Int
        public var unsent: Int
        /// Audio held back while paused (asked, not lost).
        public var paused: Int
        /// Connects refused and connections a consumer closed or dropped.
        public var failures: Int
        public var rejoins: Int

        /// Seconds of PCM sent, over every speaker (nil for Opus, whose packets' durations vary).
        public func seconds(_ audio: SpeakerStreamAudio) -> Double? { audio.isPCM ? Double(bytes) / Double(audio.bytesPerSecond) : nil }
    }

    public func run() async throws(BotError) -> Report {
        try await config.withTLSBridges { config throws(BotError) in
            let room = SpeakerRoom(config: config, destination: destination, audio: audio, participant: participant, status: status, pauses: pauses,
                                   listen: listen)
            return try await room.run(for: duration)
        }
    }
}
