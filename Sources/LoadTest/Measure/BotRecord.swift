import Foundation

/// One bot's outcome, as `bots.csv` and `raw.json` hold it: who it was, how its join went,
/// what it sent or received. Times are seconds; join phases are seconds from the start of
/// the attempt that succeeded.
public struct BotRecord: Codable, Sendable, Equatable {
    public enum Role: String, Codable, Sendable { case publisher, subscriber }
    public enum State: String, Codable, Sendable {
        /// Joined and had media until the end.
        case joined
        /// Never joined after all retries.
        case failed
        /// Joined, then lost (Janus hung up, ICE failed) and not back by the end.
        case lost
        /// Stopped (end or Ctrl-C) before it had joined.
        case notStarted = "not_started"
    }

    public var role: Role
    /// Index among all bots of its role across shards, and the shard that ran it.
    public var index: Int
    public var shard: Int
    public var display: String
    /// Janus publisher id (publishers) or nil.
    public var feedID: Int64?
    public var state: State
    public var attempts: Int = 0
    public var error: String?
    /// When the successful attempt began, seconds after the run's start.
    public var startedAt: Double?
    public var phases = JoinPhases()

    // Publisher side.
    public var framesSealed = 0
    public var sealFailures = 0
    /// Keyframe requests and their answers (direct-path video only).
    public var keyframes: KeyframeCounts?
    /// NACKs and their answers (direct-path video only).
    public var nacks: NackCounts?
    public var packetsSent: UInt64 = 0
    public var bytesSent: UInt64 = 0
    /// Round-trip time to Janus (RTCP RR), ms; loss Janus reports for what we sent, %.
    public var rttMs: Double?
    public var remoteLossPercent: Double?

    // Subscriber side.
    /// Feeds subscribed, and how many delivered at least one decrypted frame.
    public var feeds = 0
    public var feedsReceiving = 0
    public var framesReceived = 0
    public var framesOpened = 0
    /// Of those, video access units (with --video).
    public var videoFramesOpened = 0
    public var videoFramesReceived = 0
    /// Pictures decoded and their sizes, for a subscriber that decodes (`decodeEvery`).
    public var videoPicturesDecoded: Int?
    /// Seconds from the join's start until every video feed had opened a keyframe: a first picture.
    public var firstKeyframeSeconds: Double?
    public var videoPictureSizes: [String]?
    /// Frames that did not open, by `DropReason` raw value.
    public var decryptFailures: [String: Int] = [:]
    public var packetsReceived: UInt64 = 0
    public var bytesReceived: UInt64 = 0
    public var packetsLost: Int64 = 0
    /// Mean interarrival jitter over the received streams, ms.
    public var jitterMs: Double?
    /// E-model MOS per received stream: mean and worst.
    public var mos: Double?
    public var mosWorst: Double?
    /// Per feed (publisher id): decrypted audio frames in the steady window (all bots in).
    public var steadyFramesByFeed: [String: Int]?
    /// Publishers: audio frames sent in the steady window.
    public var steadyFramesSent: Int?

    /// Packets received and lost in the steady window (loss while streams start, before the
    /// first packet counted, is left out).
    public var steadyPacketsReceived: UInt64?
    public var steadyPacketsLost: Int64?

    /// How the bot came back after losing Janus or its media path (nil in reports written
    /// before bots came back).
    public var comeback: Comeback?

    /// The selected ICE candidate pair as `CandidatePair.summary` (`relay/udp→host`: through
    /// a TURN relay reached over UDP; `host→host`: direct), from the last statistics read.
    public var candidatePair: String?
    /// Publishers on the direct send path: packets handed to libnice rather than written with
    /// sendto (a relayed pair: libnice frames them for the TURN server).
    public var packetsThroughAgent: UInt64?
    /// Whether the media went through a TURN relay (nil: no pair known).
    public var relayed: Bool? { candidatePair.map { $0.hasPrefix("relay") } }

    public var decryptFailuresTotal: Int { decryptFailures.values.reduce(0, +) }
    /// Loss in the steady window, or over the whole run if there was none.
    public var lossPercent: Double? {
        let received = steadyPacketsReceived ?? packetsReceived, lost = max(0, steadyPacketsLost ?? packetsLost)
        let total = Double(received) + Double(lost)
        return total > 0 ? 100 * Double(lost) / total : nil
    }

    public init(role: Role, index: Int, shard: Int, display: String, state: State = .notStarted) {
        self.role = role
        self.index = index
        self.shard = shard
        self.display = display
        self.state = state
    }
}

/// One bot's losses and comebacks over the run.
public struct Comeback: Codable, Sendable, Equatable {
    /// WebSocket drops under an open session, and those that ended in a `claim` (session,
    /// handles and PeerConnection kept).
    public var connectionDrops = 0
    public var claims = 0
    /// Comebacks on a new Janus session (the old one ended), and new PeerConnections on the
    /// same session (ICE failed, media lost, or `--chaos ice-restart`).
    public var rejoins = 0
    public var mediaRestarts = 0
    /// Seconds from each loss to media again: the first decrypted frame (subscriber) or Janus's
    /// `webrtcup` (publisher). Claims lose no media and add nothing here.
    public var seconds: [Double] = []
    /// Sum of `seconds`.
    public var gapSeconds: Double { seconds.reduce(0, +) }
    /// Why the bot did not come back, if it did not.
    public var gaveUp: String?

    public init() {}

    /// Adds another bot's counters (for totals).
    public mutating func add(_ o: Comeback) {
        connectionDrops += o.connectionDrops
        claims += o.claims
        rejoins += o.rejoins
        mediaRestarts += o.mediaRestarts
        seconds += o.seconds
    }
}

/// When each step of joining finished, seconds from the attempt's start (nil: not reached).
/// The steps, in order: the WebSocket opens; Janus creates the session; the VideoRoom handle
/// is attached; `joined` (publisher) or Janus's offer (subscriber); offer/answer done (the
/// publisher applied Janus's answer, the subscriber's `start` was acknowledged); ICE connected;
/// DTLS done (webrtcbin's connection state `connected`); the first RTP packet sent (publisher)
/// or received (subscriber); the first frame decrypted (subscriber; with --no-e2ee received).
public struct JoinPhases: Codable, Sendable, Equatable {
    public var websocket: Double?
    public var session: Double?
    public var attached: Double?
    public var joined: Double?
    public var negotiated: Double?
    public var iceConnected: Double?
    public var dtlsConnected: Double?
    public var firstRTP: Double?
    public var firstDecrypted: Double?

    public init() {}

    public static let names = ["websocket", "session", "attached", "joined", "negotiated", "ice_connected", "dtls_connected", "first_rtp", "first_decrypted"]
    public var values: [Double?] { [websocket, session, attached, joined, negotiated, iceConnected, dtlsConnected, firstRTP, firstDecrypted] }

    /// Each phase's own duration: from the latest earlier phase reached (or the start) to it.
    public var steps: [Double?] {
        var previous = 0.0
        return values.map { v in
            guard let v else { return nil }
            defer { previous = max(previous, v) }
            return max(0, v - previous)
        }
    }
}
