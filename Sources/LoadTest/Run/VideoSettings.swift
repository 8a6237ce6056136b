/// The H.264 a video publisher sends: encoded once per process by the shared encoder
/// (load-source-video.pipeline), whatever the number of bots.
public struct VideoSettings: Sendable, Codable, Equatable {
    public var width: Int
    public var height: Int
    public var fps: Int
    public var kbps: Int
    /// Frames from one keyframe to the next: a subscriber that joins mid-call waits at most
    /// this long for its first picture (the shared encoder answers no one's PLI by itself).
    public var keyframeInterval: Int
    /// videotestsrc's pattern and how fast it moves: x264 spends the bitrate only on a picture
    /// that changes (a still ball needs 80 kbit/s whatever the bitrate asked).
    public var pattern: String
    public var speed: Int

    public init(width: Int, height: Int, fps: Int, kbps: Int, keyframeInterval: Int, pattern: String = "smpte", speed: Int = 4) {
        self.width = width
        self.height = height
        self.fps = fps
        self.kbps = kbps
        self.keyframeInterval = keyframeInterval
        self.pattern = pattern
        self.speed = speed
    }

    /// A phone's camera in a call: 640x360 at 15 fps, about 600 kbit/s (measured 615 with this
    /// pattern), a keyframe every 2 s.
    public static let phone = VideoSettings(width: 640, height: 360, fps: 15, kbps: 600, keyframeInterval: 30)
    /// ECall's capped room (128 kbit/s): 640x360 at 10 fps, 96 kbit/s, a keyframe every 2 s; the
    /// still ball of the first load tests (about 80 kbit/s).
    public static let ecall = VideoSettings(width: 640, height: 360, fps: 10, kbps: 96, keyframeInterval: 20, pattern: "ball", speed: 0)

    public static let presets: [String: VideoSettings] = ["phone": .phone, "ecall": .ecall]

    /// Milliseconds from one keyframe to the next.
    public var keyframeMilliseconds: Int { 1000 * keyframeInterval / max(1, fps) }

    /// Values for load-source-video.pipeline.
    var pipelineValues: [String: String] {
        ["width": "\(width)", "height": "\(height)", "fps": "\(fps)", "kbps": "\(kbps)", "keyint": "\(keyframeInterval)",
         "pattern": pattern, "speed": "\(speed)"]
    }

    /// Why these cannot be encoded, or nil.
    public var problem: String? {
        if !(16...1920).contains(width) || !(16...1080).contains(height) || width % 2 != 0 || height % 2 != 0 {
            return "the size must be even, from 16x16 to 1920x1080 (got \(width)x\(height))"
        }
        if !(1...60).contains(fps) { return "the frame rate must be 1 to 60 fps (got \(fps))" }
        if !(16...20_000).contains(kbps) { return "the bitrate must be 16 to 20000 kbit/s (got \(kbps))" }
        if !(1...600).contains(keyframeInterval) { return "the keyframe interval must be 1 to 600 frames (got \(keyframeInterval))" }
        return nil
    }

    public var description: String { "\(width)x\(height) at \(fps) fps, \(kbps) kbit/s, a keyframe every \(keyframeInterval) frames" }
}
