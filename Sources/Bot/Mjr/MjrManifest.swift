public import FrameCrypto
public import Foundation
import Mjr

/// `manifest.json` of `sfubot mjr decrypt`: each output file, the `.mjr` files it came
/// from, and what happened to their frames (same counters as the recorder's manifest).
public struct MjrManifest: Codable, Sendable {
    public var created: Date
    public var outputs: [Output] = []
    /// Inputs with no media (data channel recordings), left out.
    public var skipped: [String] = []
    /// `--signing-key`: the outputs and the `.mjr` inputs by hash, signed (docs/proof.md).
    public var proof: ManifestProof? = nil

    public struct Output: Codable, Sendable {
        /// The file written, relative to the folder; nil if no frame could be kept (wrong key).
        public var file: String?
        /// Why the file could not be written, if so (it may hold what was written before).
        public var error: String?
        /// The file was read back and holds less than was written to it (what, per track): the
        /// run exits non-zero.
        public var partial: String? = nil
        public var tracks: [Track]
    }

    public struct Track: Codable, Sendable {
        public var input: String
        public var kind: String
        public var codec: String
        /// The Janus user id from the file name, if it has Janus's form.
        public var sender: String?
        /// The header's `s` (recorder created) and `u` (first packet written), wall clock.
        public var created: Date
        public var firstPacket: Date
        public var packets: Int
        public var lostPackets: Int
        public var malformedPackets: Int
        /// Packets whose sequence number or timestamp did not fit the packets around them
        /// (damage): dropped, each costing only itself.
        public var outOfLinePackets: Int
        /// The file ended mid-packet (Janus killed while writing): frames up to there are kept.
        public var truncated: Bool
        /// `received` counts frames (video: access units) found, `opened` those decrypted and
        /// kept; `dropped` by reason (`no_key_opens`, `malformed` for lost packets, …).
        public var frames: FrameStats.Snapshot
        public var keyFrames: Int?
        /// Video: decrypted frames before the first keyframe, left out.
        public var beforeFirstKeyframe: Int?
        /// Seconds on the output file's timeline.
        public var firstMediaTime: Double?
        public var lastMediaTime: Double?
        /// Frames handed to the output file, and what the file holds for this track read back.
        public var written: Int? = nil
        public var onDisk: RecordingManifest.OnDisk? = nil

        enum CodingKeys: String, CodingKey {
            case input, kind, codec, sender, created, firstPacket = "first_packet", packets, lostPackets = "lost_packets"
            case malformedPackets = "malformed_packets", outOfLinePackets = "out_of_line_packets", truncated, frames, keyFrames = "key_frames"
            case beforeFirstKeyframe = "before_first_keyframe", firstMediaTime = "first_media_time", lastMediaTime = "last_media_time"
            case written, onDisk = "on_disk"
        }

        init(_ t: MjrTrack, sender: String?) {
            input = (t.file.path as NSString).lastPathComponent
            kind = t.file.kind.rawValue
            codec = t.file.codec
            self.sender = sender
            created = t.file.created
            firstPacket = t.file.firstPacket
            packets = t.file.packets.count
            lostPackets = t.lostPackets
            malformedPackets = t.malformedPackets
            outOfLinePackets = t.outOfLinePackets
            truncated = t.file.truncated
            frames = t.stats.snapshot
            keyFrames = t.file.kind == .video ? t.keyframes : nil
            beforeFirstKeyframe = t.file.kind == .video ? t.beforeFirstKeyframe : nil
            firstMediaTime = t.firstMediaTime
            lastMediaTime = t.lastMediaTime
        }
    }

    /// Written atomically, 0600, dates as in the recorder's manifest.
    public func write(to directory: URL) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.dateEncodingStrategy = .custom { date, e in
            var c = e.singleValueContainer()
            try c.encode(date.formatted(RecordingManifest.timeFormat))
        }
        let url = directory.appendingPathComponent("manifest.json")
        let tmp = directory.appendingPathComponent(".manifest.json.tmp")
        try PrivateFiles.write(try encoder.encode(self), to: tmp)
        guard rename(tmp.path, url.path) == 0 else { throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: url.path]) }
    }

    public static func read(from directory: URL) throws -> MjrManifest {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { d in
            try RecordingManifest.timeFormat.parse(try d.singleValueContainer().decode(String.self))
        }
        return try decoder.decode(MjrManifest.self, from: Data(contentsOf: directory.appendingPathComponent("manifest.json")))
    }
}
