public import Foundation

/// Everything a run measured (`raw.json`): the per-bot records and the once-a-second
/// timeline. `sfubot load merge` joins several of these; the summary is derived from it.
public struct LoadResult: Codable, Sendable {
    public var room: Int64
    public var janus: String
    public var e2ee: Bool
    public var video: Bool
    public var media: String?
    /// Bots planned across all shards.
    public var publishers: Int
    public var subscribers: Int
    public var subscribeLimit: Int?
    /// Faults injected (`--chaos`), per minute by kind; nil: none.
    public var chaos: ChaosPlan?
    public var shards: [Shard]
    public var bots: [BotRecord]

    /// One process's run.
    public struct Shard: Codable, Sendable {
        public var index: Int
        public var count: Int
        public var host: String
        public var started: Date
        public var ended: Date
        /// All of this shard's bots had joined or given up; measuring the room held from here.
        public var steadyStart: Date?
        public var steadyEnd: Date?
        /// Stopped by Ctrl-C/SIGTERM before the planned end.
        public var interrupted: Bool
        public var timeline: [TimelineSample]
        /// Process totals: CPU seconds used during the steady window, peak RSS and threads.
        public var steadyCPUSeconds: Double?
        /// The kernel's part of `steadyCPUSeconds` (absent in results from before it was kept).
        public var steadyKernelCPUSeconds: Double? = nil
        public var peakRSSBytes: Int
        public var peakThreads: Int
        /// Threads and RSS before any bot started (the shared encoder running).
        public var baselineThreads: Int
        public var baselineRSSBytes: Int
        /// RTP packets sent and received in the steady window (webrtcbin counters).
        public var steadyPacketsSent: UInt64?
        public var steadyPacketsReceived: UInt64?
        public var fanOutGroups: Int
        /// How publishers sent audio (`LoadPlan.SendPath`), and how many attempts wanted the
        /// direct path and fell back to webrtcbin (absent in results from before).
        public var sendPath: String? = nil
        public var directFallbacks: Int? = nil
        /// How subscribers took packets in (`LoadPlan.ReceivePath`), and the packets their
        /// nicesrc gave past webrtcbin's receive queue and through it (absent without subscribers).
        public var receivePath: String? = nil
        public var receivedPastQueue: Int? = nil
        public var receivedThroughQueue: Int? = nil
        /// Each fault `--chaos` injected and how the room came back from it.
        public var faults: [FaultRecord]?
    }
}

/// The room once a second (per shard; merged by time since start).
public struct TimelineSample: Codable, Sendable, Equatable {
    /// Seconds since the shard started.
    public var t: Double
    public var publishersJoined: Int
    public var subscribersJoined: Int
    public var failed: Int
    public var mbpsOut: Double
    public var mbpsIn: Double
    /// Packets lost over packets expected since the previous statistics read, %.
    public var lossPercent: Double?
    public var decryptFailures: Int
    public var framesOpened: Int
    public var cpuCores: Double
    public var rssMB: Double
    public var threads: Int
}
