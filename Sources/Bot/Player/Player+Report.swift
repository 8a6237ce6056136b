public import FrameCrypto

/// What a playback sent (`Player.run`).
extension Player {
    public struct Report: Sendable {
        /// Audio frames sealed (with E2EE) or passed as is, including those sealed while the
        /// media path came up, which were dropped before sending.
        public var frames: FrameStats.Snapshot
        /// Audio frames that left for Janus.
        public var framesSent: Int
        /// Video access units sealed, and how many left for Janus.
        public var videoFrames: FrameStats.Snapshot
        public var videoFramesSent: Int
        public var seconds: Double
        public var publisherID: Int64
        /// Times the player lost Janus or its media path and came back.
        public var rejoins = 0
    }
}
