public import Foundation

extension RecordingManifest {
    /// One stretch of a video file in one format (picture size, profile, SPS/PPS), as times
    /// inside the file: a sender that changes its size mid-call is still one file (`VideoFile`).
    public struct VideoPart: Codable, Sendable, Equatable {
        public var width: Int?
        public var height: Int?
        public var profile: String?
        /// Why this part follows the previous one, e.g. "picture size changed from 640x360 to
        /// 320x180"; nil for the first.
        public var cause: String?
        /// Wall-clock time of the change; nil for the first part (the track's first frame).
        public var start: Date?
        /// Pipeline running time of the part's first and last frame, in seconds: the clock of
        /// the entry's `first_media_time`, so a player's position is `media_start - first_media_time`.
        public var mediaStart: Double?
        public var mediaEnd: Double?
        /// Access units written in this part.
        public var frames = 0

        public init(width: Int?, height: Int?, profile: String?) {
            self.width = width
            self.height = height
            self.profile = profile
        }

        mutating func add(frameAt pts: Double) {
            frames += 1
            if mediaStart == nil { mediaStart = pts }
            mediaEnd = pts
        }

        enum CodingKeys: String, CodingKey {
            case width, height, profile, cause, start, mediaStart = "media_start", mediaEnd = "media_end", frames
        }
    }
}
