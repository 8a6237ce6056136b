import FrameCrypto
import Foundation

/// `relay --to-room` without `--participant`: everyone publishing audio in the first room, each
/// bridged into the other as a publisher of their own (a `RoomInput` and a `Player` each), under
/// the display they have in the first room, sealed as that participant (`protection(display)`).
/// One who left and is not back within `leaveGrace` leaves the other room too.
public struct Bridge: Sendable {
    /// The first room: its Janus, room, key; `display` is the bridge's own (it watches the room).
    public let from: BotConfig
    /// The other room: its Janus and room (`display` and `protection` are each participant's).
    public let to: BotConfig
    /// The sealing of a participant in the other room, from their display.
    public let protection: @Sendable (String) async throws(BotError) -> FrameProtection
    public let duration: Duration?
    public var leaveGrace: Duration = .seconds(15)
    public let status = RelayStatus()
    /// Only this participant (a feed id or an ECall user id); nil: everyone publishing audio.
    public var only: String?
    /// One switch for every participant bridged: paused, their frames are held back (counted)
    /// and their publishers in the other room stay, silent; resumed, they go on (video at a
    /// keyframe).
    public var pauses = RecordingPauses()

    public init(from: BotConfig, to: BotConfig, duration: Duration?, protection: @escaping @Sendable (String) async throws(BotError) -> FrameProtection) {
        self.from = from
        self.to = to
        self.duration = duration
        self.protection = protection
    }

    /// What happened to each participant bridged.
    public struct Report: Sendable {
        public struct Bridged: Sendable {
            public var participant: String
            public var display: String
            /// What was opened in the first room, and what was sealed and sent in the other.
            public var opened: Relay.Report?
            public var sent: Player.Report?
            public var error: String?
        }
        public var bridged: [Bridged]
        public var rejoins: Int
    }

    public func run() async throws(BotError) -> Report {
        let room = BridgeRoom(self)
        return try await room.run(for: duration)
    }
}
