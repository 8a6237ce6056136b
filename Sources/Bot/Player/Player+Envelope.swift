extension Player {
    /// ECall phones send at most 854x480 at 10 fps; rooms cap bitrate at 128 kbit/s.
    public struct VideoEnvelope: Sendable {
        public var maxWidth = 854
        public var maxHeight = 480
        public var maxFPS = 10
        public var kilobitsPerSecond = 96
        public init() {}

        /// The largest even size within the envelope with the source's aspect ratio.
        public func fit(width: Int, height: Int) -> (width: Int, height: Int) {
            let scale = min(1, Double(maxWidth) / Double(width), Double(maxHeight) / Double(height))
            func even(_ x: Double) -> Int { max(2, Int(x) / 2 * 2) }
            return (even(Double(width) * scale), even(Double(height) * scale))
        }
    }
}
