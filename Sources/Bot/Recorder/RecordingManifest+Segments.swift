public import Foundation
import FrameCrypto
import GStreamerKit

/// Outages and what a participant's recording is made of across them.
extension RecordingManifest {
    /// A time the recorder (or one participant) was not being recorded, and why.
    public struct Gap: Codable, Sendable {
        public var start: Date
        /// nil while it lasts.
        public var end: Date?
        public var seconds: Double?
        public var cause: String

        public init(start: Date, end: Date? = nil, cause: String) {
            self.start = start
            self.cause = cause
            if let end { close(at: end) }
        }

        public mutating func close(at end: Date = Date(), cause: String?) {
            if let cause { self.cause = cause }
            close(at: end)
        }

        private mutating func close(at end: Date) {
            self.end = end
            seconds = end.timeIntervalSince(start)
        }
    }

    /// How often the recorder lost Janus and came back.
    public struct Reconnection: Codable, Sendable, Equatable {
        /// WebSockets to Janus that dropped under an open session.
        public var connectionDrops = 0
        /// Of those, the ones after which Janus gave the session back (`claim`): nothing else
        /// was lost.
        public var reclaims = 0
        /// New sessions after one was lost (not claimed back, or Janus restarted).
        public var rejoins = 0
        /// PeerConnections replaced on the same session because their media path was lost.
        public var mediaRestarts = 0
        /// Seconds the recorder spent out of the room (sum of `gaps`).
        public var gapSeconds = 0.0

        public init() {}

        enum CodingKeys: String, CodingKey {
            case connectionDrops = "connection_drops", reclaims, rejoins, mediaRestarts = "media_restarts", gapSeconds = "gap_seconds"
        }
    }

    /// One participant (by user id) and the files that hold them, in order.
    public struct Participant: Codable, Sendable {
        public var userID: String
        /// The display of their latest segment.
        public var display: String
        public var segments: [Segment]
        /// Between consecutive segments of the same kind: when they were not recorded, and why.
        public var gaps: [Gap]

        enum CodingKeys: String, CodingKey { case userID = "user_id", display, segments, gaps }
    }

    /// One file of a participant: one Janus feed's track between a join (or the recorder coming
    /// back) and a leave (or the recorder losing Janus).
    public struct Segment: Codable, Sendable {
        public var file: String
        public var kind: String
        public var feedID: Int64
        /// Wall-clock time of the first and last frame received.
        public var start: Date?
        public var end: Date?
        /// Pipeline running time of the first and last frame written, in seconds: one clock
        /// for the whole recording, across segments.
        public var mediaStart: Double?
        public var mediaEnd: Double?

        enum CodingKeys: String, CodingKey {
            case file, kind, feedID = "feed_id", start, end, mediaStart = "media_start", mediaEnd = "media_end"
        }
    }

    /// How long before an outage was noticed its media may have stopped (seconds).
    static let noticeDelay: TimeInterval = 5

    /// The feeds grouped by participant, with the gaps between their segments of one kind. A gap
    /// that began with one of the recorder's own outages takes its cause; otherwise the
    /// participant left (or stopped sending) and came back.
    static func participants(of feeds: [Feed], recorderGaps: [Gap]) -> [Participant] {
        let byUser = Dictionary(grouping: feeds, by: \.userID)
        return byUser.keys.sorted().map { user in
            let own = byUser[user, default: []].sorted { ($0.firstFrame ?? $0.joined) < ($1.firstFrame ?? $1.joined) }
            let segments = own.map {
                Segment(file: $0.file, kind: $0.kind, feedID: $0.feedID, start: $0.firstFrame, end: $0.lastFrame ?? $0.left,
                        mediaStart: $0.firstMediaTime, mediaEnd: $0.lastMediaTime)
            }
            var gaps: [Gap] = []
            for kind in ["audio", "video"] {
                let ofKind = segments.filter { $0.kind == kind }
                for (a, b) in zip(ofKind, ofKind.dropFirst()) {
                    guard let end = a.end, let start = b.start, start > end else { continue }
                    // The recorder's outage caused it if the segment ended during it, or just
                    // before it was noticed (media loss is noticed after `mediaLossTimeout`).
                    let cause = recorderGaps.first { g in
                        end >= g.start.addingTimeInterval(-Self.noticeDelay) && end <= (g.end ?? .distantFuture)
                    }?.cause
                    gaps.append(Gap(start: end, end: start, cause: "\(kind): " + (cause ?? "the participant left or stopped sending")))
                }
            }
            return Participant(userID: user, display: own.last?.display ?? user, segments: segments, gaps: gaps.sorted { $0.start < $1.start })
        }
    }
}

extension RecordingManifest {
    enum CodingKeys: String, CodingKey {
        case room, janus, e2ee, started, ended, feeds, timeline, mix, earlierMixes = "earlier_mixes", errors, gaps, pauses, reconnection, participants
        case unrecorded, mixOnDisk = "mix_on_disk", proof, candidatePair = "candidate_pair", receiveDrops = "receive_drops", repaired, recording
        case frameFormat = "frame_format"
    }

    /// Manifests written before reconnection (no gaps, counters or participants) still read.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        room = try c.decode(Int64.self, forKey: .room)
        janus = try c.decode(String.self, forKey: .janus)
        e2ee = try c.decode(Bool.self, forKey: .e2ee)
        started = try c.decode(Date.self, forKey: .started)
        ended = try c.decodeIfPresent(Date.self, forKey: .ended)
        feeds = try c.decode([Feed].self, forKey: .feeds)
        timeline = try c.decodeIfPresent([TimelineEvent].self, forKey: .timeline) ?? []
        mix = try c.decodeIfPresent(String.self, forKey: .mix)
        earlierMixes = try c.decodeIfPresent([String].self, forKey: .earlierMixes) ?? []
        errors = try c.decodeIfPresent([OutputError].self, forKey: .errors) ?? []
        gaps = try c.decodeIfPresent([Gap].self, forKey: .gaps) ?? []
        pauses = try c.decodeIfPresent([Pause].self, forKey: .pauses) ?? []
        reconnection = try c.decodeIfPresent(Reconnection.self, forKey: .reconnection) ?? Reconnection()
        participants = try c.decodeIfPresent([Participant].self, forKey: .participants) ?? []
        unrecorded = try c.decodeIfPresent([Feed].self, forKey: .unrecorded) ?? []
        mixOnDisk = try c.decodeIfPresent(OnDisk.self, forKey: .mixOnDisk)
        proof = try c.decodeIfPresent(ManifestProof.self, forKey: .proof)
        candidatePair = try c.decodeIfPresent(CandidatePair.self, forKey: .candidatePair)
        receiveDrops = try c.decodeIfPresent(Int.self, forKey: .receiveDrops)
        repaired = try c.decodeIfPresent(Int.self, forKey: .repaired)
        recording = try c.decodeIfPresent(String.self, forKey: .recording)
        frameFormat = try c.decodeIfPresent(FrameFormatName.self, forKey: .frameFormat)
    }
}
