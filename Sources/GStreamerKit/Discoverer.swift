internal import CGStreamer
internal import CGStreamerShims
import Foundation

/// What a media file holds, from GStreamer's discoverer.
public struct MediaInfo: Sendable {
    /// Caps of the first audio / video stream, e.g. `video/x-h264, profile=(string)high, ...`.
    public var audioCaps: String?
    public var videoCaps: String?
    public var duration: Double

    public var hasAudio: Bool { audioCaps != nil }
    public var hasVideo: Bool { videoCaps != nil }

    /// Reads `path` (blocking, up to `timeout` seconds) with `gst_discoverer_discover_uri`.
    public static func discover(_ path: String, timeout: UInt32 = 10) throws(GStreamerError) -> MediaInfo {
        GStreamer.initialize()
        let uri = URL(fileURLWithPath: path).absoluteString
        var audio: UnsafeMutablePointer<CChar>?, video: UnsafeMutablePointer<CChar>?, error: UnsafeMutablePointer<CChar>?
        var duration: guint64 = 0
        if sfb_discover(uri, timeout, &audio, &video, &duration, &error) != 0 {
            _ = takeGString(audio)
            _ = takeGString(video)
            throw .parse("cannot read \(path): \(takeGString(error) ?? "unknown")")
        }
        return MediaInfo(audioCaps: takeGString(audio), videoCaps: takeGString(video), duration: Double(duration) / 1e9)
    }
}
