import ArgumentParser
import LoadTest

/// `sfubot load --video`'s picture: a preset, and any of its values overridden.
struct LoadVideoOptions: ParsableArguments {
    @Flag(help: "Publishers also send H.264 video (one shared encoder, sealed per frame by each bot).")
    var video = false
    @Option(help: ArgumentHelp("Video preset: phone (640x360, 15 fps, 600 kbit/s, a keyframe every 30 frames) or ecall (640x360, 10 fps, 96 kbit/s, every 20 frames).", valueName: "name"))
    var videoPreset = "phone"
    @Option(help: ArgumentHelp("Picture size, overriding the preset's.", valueName: "WxH"))
    var videoSize: String?
    @Option(help: ArgumentHelp("Frames per second, overriding the preset's.", valueName: "fps"))
    var videoFps: Int?
    @Option(help: ArgumentHelp("Video bitrate in kbit/s, overriding the preset's.", valueName: "kbit/s"))
    var videoBitrate: Int?
    @Option(help: ArgumentHelp("Frames from one keyframe to the next, overriding the preset's: a subscriber joining mid-call waits at most this long for a picture.", valueName: "frames"))
    var keyframeInterval: Int?

    @Option(help: ArgumentHelp("Subscribers 0, N, 2N … decode the video they decrypt (avdec_h264), to check the pictures; the others only decrypt.", valueName: "N"))
    var decodeEvery: Int?

    func validate() throws {
        _ = try settings()
        if let decodeEvery, decodeEvery < 1 { throw ValidationError("--decode-every takes N ≥ 1 (1: every subscriber decodes); got \(decodeEvery)") }
    }

    /// The preset with the overrides applied; a ValidationError says which value to fix.
    func settings() throws -> VideoSettings {
        guard var s = VideoSettings.presets[videoPreset] else {
            throw ValidationError("--video-preset takes one of \(VideoSettings.presets.keys.sorted().joined(separator: ", ")); got \(videoPreset)")
        }
        if let videoSize {
            let parts = videoSize.lowercased().split(separator: "x")
            guard parts.count == 2, let w = Int(parts[0]), let h = Int(parts[1]) else {
                throw ValidationError("--video-size takes WIDTHxHEIGHT, e.g. 640x360; got \(videoSize)")
            }
            s.width = w
            s.height = h
        }
        if let videoFps { s.fps = videoFps }
        if let videoBitrate { s.kbps = videoBitrate }
        if let keyframeInterval { s.keyframeInterval = keyframeInterval }
        if let problem = s.problem { throw ValidationError("video: \(problem)") }
        return s
    }
}
