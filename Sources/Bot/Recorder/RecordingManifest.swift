public import FrameCrypto
public import GStreamerKit
public import Foundation

/// `manifest.json` beside the recordings: who was recorded, into which file, when, and
/// what happened to their frames.
public struct RecordingManifest: Codable, Sendable {
    public var room: Int64
    public var janus: String
    public var e2ee: Bool
    /// The frame layout the call's frames were opened with (ecall, framecryptor, sframe); nil
    /// without encryption (and in manifests older than the formats).
    public var frameFormat: FrameFormatName?
    public var started: Date
    public var ended: Date?
    public var feeds: [Feed]

    public struct Feed: Codable, Sendable {
        public var feedID: Int64
        public var display: String
        public var userID: String
        public var displayName: String
        public var mid: String
        public var kind: String
        public var codec: String
        public var file: String
        public var joined: Date
        public var left: Date?
        /// Wall-clock time of the first and last frame received (before decryption): the first
        /// as it arrived (by its time stamp, a lip-sync hold not counted), the last as handled.
        public var firstFrame: Date?
        public var lastFrame: Date?
        public var frames: FrameStats.Snapshot
        /// Video: keyframe requests (PLIs) sent for this track.
        public var keyFrameRequests: Int?
        /// Video: keyframes received (decrypted access units with an IDR slice).
        public var keyFrames: Int?
        /// Video: the stream's resolution as written.
        public var width: Int?
        public var height: Int?
        /// Presentation time of the first and last frame written, in seconds on the recorder's
        /// pipeline clock: the tracks of one recording share it.
        public var firstMediaTime: Double?
        public var lastMediaTime: Double?
        /// Why this track stopped being written before the feed left (the file keeps what was
        /// written until then); nil if it was not cut short.
        public var error: String? = nil
        /// Video: the file's parts, one per format it was written in (a new picture size or
        /// SPS/PPS mid-call goes on in the same file), in order.
        public var parts: [VideoPart]? = nil
        /// Per-sender keys (`--key-map`): frames opened by each of the sender's key indexes,
        /// e.g. {"3": 120, "2": 4}; nil with a call key or none.
        public var openedByKeyIndex: [String: Int]? = nil
        /// Frames the recorder handed to this file's muxer for this track.
        public var written: Int? = nil
        /// Frames opened and dropped while the recording was paused; nil if none.
        public var pausedFrames: Int? = nil
        /// What the file holds for this track, read back from disk once the recording finished.
        public var onDisk: OnDisk? = nil
        /// Why this track was not put into one file with the publisher's other track (the track
        /// files were kept as they are).
        public var notMerged: String? = nil
        /// Frames that arrived from Janus (one per RTP timestamp), counted before the
        /// depayloader; more than `frames.received` means some were discarded before opening.
        public var arrived: Int? = nil

        enum CodingKeys: String, CodingKey {
            case feedID = "feed_id", display, userID = "user_id", displayName = "display_name", mid, kind, codec, file
            case joined, left, firstFrame = "first_frame", lastFrame = "last_frame", frames
            case keyFrameRequests = "key_frame_requests", keyFrames = "key_frames", width, height
            case firstMediaTime = "first_media_time", lastMediaTime = "last_media_time", error, parts
            case openedByKeyIndex = "opened_by_key_index", written, pausedFrames = "paused_frames", onDisk = "on_disk", notMerged = "not_merged", arrived
        }
    }

    /// One track of a file as read back from disk: demuxed and counted, decoded (audio whole,
    /// video its first pictures).
    public struct OnDisk: Codable, Sendable, Equatable {
        /// The file's size.
        public var bytes: Int
        /// Frames (audio packets, video access units) of this track in the file.
        public var frames: Int
        /// Of those, decoded by the check: every audio frame, the first video pictures.
        public var decoded: Int
        /// From the track's first to its last frame's presentation time.
        public var seconds: Double?
    }

    /// Publishers joining and leaving the room while it was recorded.
    public var timeline: [TimelineEvent] = []
    /// `--mix`: the file holding every publisher's audio mixed, from the first subscription on.
    public var mix: String?
    /// The mix as read back from disk once the recording finished.
    public var mixOnDisk: OnDisk? = nil
    /// Mixes of the same recording written before it was resumed (a restart), oldest first.
    public var earlierMixes: [String] = []
    /// Tracks that could not be written or stopped being written, and a mix that stopped, while
    /// the rest of the call went on being recorded: one entry each.
    public var errors: [OutputError] = []
    /// The recorder's own outages (Janus or the media path lost), with their causes.
    public var gaps: [Gap] = []
    /// When the recording was paused (`RecordingPauses`), oldest first.
    public var pauses: [Pause] = []
    public var reconnection = Reconnection()
    /// Every participant's segments (files) in order, across reconnections and rejoins.
    public var participants: [Participant] = []
    /// Tracks subscribed to of which no frame reached a file (no key opened them, or none
    /// arrived): their counters say why; they have no file.
    public var unrecorded: [Feed] = []
    /// The signing key's proof of the finished recording (`--signing-key`); nil without a key.
    public var proof: ManifestProof? = nil
    /// The ICE candidate pair the media came over (the latest PeerConnection's, once ICE
    /// selected one): `local` is `relay` when it went through the TURN server.
    public var candidatePair: CandidatePair? = nil
    /// Packets the kernel dropped on the recorder's media sockets because the recorder did not
    /// read them in time (a full receive buffer: an overloaded machine); nil before ICE
    /// connected. Janus may have sent a dropped packet again when asked (NACK); if not, its
    /// frame is missing from a file.
    public var receiveDrops: Int? = nil
    /// Packets lost on the way (in the network or the kernel) that the recorder asked for again
    /// (NACK) and got in time, so no frame was missing for them; nil before ICE connected.
    public var repaired: Int? = nil
    /// With a signing key: the recording's id, as every checkpoint signs it (`proof.jsonl`). Not
    /// signed here until the end, but `verify` fails a folder whose checkpoints name another.
    public var recording: String? = nil

    /// Whether anything the recorder should have written is missing: each loss is in `errors`.
    public var lostSomething: Bool { !errors.isEmpty }

    /// One output that failed while the others went on.
    public struct OutputError: Codable, Sendable {
        public var time: Date
        /// The publisher whose track it was; nil for the mix.
        public var feedID: Int64?
        public var display: String?
        public var mid: String?
        /// `audio` or `video`; nil for the mix.
        public var kind: String?
        /// The file, which keeps what was written before the error; nil if none was started.
        public var file: String?
        public var error: String

        enum CodingKeys: String, CodingKey { case time, feedID = "feed_id", display, mid, kind, file, error }
    }

    public struct TimelineEvent: Codable, Sendable {
        public var time: Date
        /// `joined` or `left`.
        public var event: String
        public var feedID: Int64
        public var display: String

        enum CodingKeys: String, CodingKey { case time, event, feedID = "feed_id", display }
    }

    /// ISO 8601 in UTC with milliseconds.
    static let timeFormat = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

    /// ECall's display `"<userId>:<Name>"`, split on the first colon.
    static func splitDisplay(_ d: String) -> (String, String) {
        guard let i = d.firstIndex(of: ":") else { return (d, d) }
        return (String(d[..<i]), String(d[d.index(after: i)...]))
    }

    /// Writes the manifest atomically (temporary file, then rename), so a reader or a crash
    /// never sees half of it.
    public func write(to directory: URL) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.dateEncodingStrategy = .custom { date, e in
            var c = e.singleValueContainer()
            try c.encode(date.formatted(Self.timeFormat))
        }
        let data = try encoder.encode(self)
        let url = directory.appendingPathComponent("manifest.json")
        let tmp = directory.appendingPathComponent(".manifest.json.tmp")
        try PrivateFiles.write(data, to: tmp)
        guard rename(tmp.path, url.path) == 0 else { throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: url.path]) }
    }

    public static func read(from directory: URL) throws -> RecordingManifest {
        try decoder.decode(RecordingManifest.self, from: Data(contentsOf: directory.appendingPathComponent("manifest.json")))
    }

    /// Reads a manifest's JSON as `write` wrote it.
    public static var decoder: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { d in
            let text = try d.singleValueContainer().decode(String.self)
            return try Self.timeFormat.parse(text)
        }
        return decoder
    }
}
