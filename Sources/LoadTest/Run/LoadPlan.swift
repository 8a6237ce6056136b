public import Bot
public import Janus
public import Logging

/// What `sfubot load` runs: the room, how many bots of each role, their media and pace.
public struct LoadPlan: Sendable {
    public var janusURL: String
    public var janus = JanusSession.Options()
    /// STUN/TURN servers and the ICE transport policy of every bot.
    public var ice = ICEServers()
    public var room: Int64
    public var publishers: Int
    public var subscribers: Int
    public var video = false
    /// What video publishers send (`video`): size, rate, bitrate, keyframe interval.
    public var videoSettings = VideoSettings.phone
    /// Subscribers 0, N, 2N … decode the video they open (avdec_h264), to check the pictures;
    /// nil: none decodes (the others only open frames).
    public var decodeEvery: Int?
    /// Audio file to send (encoded once, looped); nil: a 440 Hz tone.
    public var media: String?
    /// How long the room runs once every bot has joined or given up; nil: until cancelled.
    public var duration: Duration?
    /// Bots started per second.
    public var ramp: Double = 10
    public var protection: FrameProtection
    public var subscribeLimit: Int?
    /// This process runs shard `shard.index` of `shard.count` (bots are dealt round-robin).
    public var shard = Shard(index: 0, count: 1)
    /// Attempts after the first for a bot that fails to join (backoff 1 s, 2 s, 4 s … ≤ 30 s).
    public var retries = 3
    public var joinTimeout: Duration = .seconds(20)
    /// A bot that lost Janus or its media path comes back within this (new PeerConnection,
    /// or new sessions with backoff) or is reported lost. Set `janus.reclaimWindow` too for
    /// sessions to be claimed back over a new WebSocket first (the CLI sets both).
    public var rejoinTimeout: Duration = .seconds(60)
    /// Faults injected in the steady window (`--chaos`); nil: none.
    public var chaos: ChaosPlan?
    /// How often each bot's webrtcbin statistics are read.
    public var statsInterval: Duration = .seconds(2)
    /// Subscribers skip rtpjitterbuffer: no thread or timers per stream (they only count and
    /// decrypt; nothing is played out). Off: the receive graph a phone-like client has.
    public var plainReceive = true
    /// Fan-out threads for the shared media (default: one per core).
    public var fanOutGroups: Int?
    /// How publishers send audio RTP.
    public var sendPath = SendPath.direct
    /// How subscribers take received packets in.
    public var receivePath = ReceivePath.direct
    /// Direct-path publishers answer Janus's NACKs about video with the packet sent before (off:
    /// they only count them, to measure what answering gives).
    public var answerNACKs = true
    public var library: PipelineLibrary
    public var logger: Logger

    /// Publisher `index`'s participant id with per-sender keys: its display is `<id>:sfubot-load`
    /// and its keys are the map's entry for it.
    public static func senderID(_ index: Int) -> String { "p\(index)" }

    public init(janusURL: String, room: Int64, publishers: Int, subscribers: Int, protection: FrameProtection, library: PipelineLibrary, logger: Logger) {
        self.janusURL = janusURL
        self.room = room
        self.publishers = publishers
        self.subscribers = subscribers
        self.protection = protection
        self.library = library
        self.logger = logger
    }

    /// How a publisher's audio RTP leaves: through webrtcbin's send chain (rtpbin, srtpenc,
    /// nicesink: 21 pad pushes per packet), or `direct`: protected with the same SRTP keys and
    /// handed to the same ICE agent by the payloader's thread (`DirectRTPSender`). Direct gives
    /// up the sender reports, so the publishers' RTT is not measured; loss still is (read from
    /// Janus's receiver reports by the sender itself). Video
    /// goes the same way (sealed once per frame before the payloader), but nothing answers
    /// Janus's NACKs (no RTX); its PLIs are counted and answered by the shared stream's next
    /// keyframe.
    public enum SendPath: String, Sendable, Codable, CaseIterable {
        case direct, webrtcbin
    }

    /// How a subscriber's received packets reach its frame opener. `webrtcbin`: its transport
    /// receive bin hands each packet from nicesrc's thread to a queue's, and each audio stream
    /// has a depayloader and a sink. `direct`: the packet goes on in nicesrc's thread whenever
    /// webrtcbin is not holding the receive side (`ReceiveInline`), and an audio packet's
    /// payload (one Opus frame) is opened on webrtcbin's pad and dropped there. Both keep
    /// webrtcbin's SRTP, rtpbin and statistics; video always has its depayloader.
    public enum ReceivePath: String, Sendable, Codable, CaseIterable {
        case direct, webrtcbin
    }

    public struct Shard: Sendable, Codable, Equatable {
        public var index: Int
        public var count: Int
        public init(index: Int, count: Int) {
            self.index = index
            self.count = count
        }

        /// Parses "I/N" (0 ≤ I < N).
        public init?(_ text: String) {
            let parts = text.split(separator: "/")
            guard parts.count == 2, let i = Int(parts[0]), let n = Int(parts[1]), n > 0, i >= 0, i < n else { return nil }
            self.init(index: i, count: n)
        }

        /// The global indices of `total` bots this shard runs.
        public func indices(of total: Int) -> [Int] { Array(stride(from: index, to: total, by: count)) }
    }
}
