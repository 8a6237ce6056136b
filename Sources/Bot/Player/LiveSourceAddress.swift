import Foundation

/// Where `sfubot relay --from URL` reads a live source, parsed once.
///
/// - `rtmp://host[:port]/app/stream` (and `rtmps://`): played from an RTMP server (`rtmp2src`).
/// - `srt://host:port[?options]`: an SRT caller by default, `?mode=listener` to wait for the
///   sender (`srtsrc`); MPEG-TS inside.
/// - `rtp://host:port[?options]`: RTP received on that address (`rtpsrc`): MPEG-TS over RTP
///   (payload type 33, what `ffmpeg -f rtp_mpegts` sends) as it is, or one stream named with
///   `?encoding-name=…`.
public struct LiveSourceAddress: Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable { case rtmp, srt, rtp }

    public let kind: Kind
    /// The URL as given: set on the source element as a property (never put into a pipeline
    /// description), never logged whole (an RTMP stream name is often the stream's key).
    let url: String

    public init(_ text: String) throws(BotError) {
        let shown = RelayDestination.redact(text)
        guard let c = URLComponents(string: text), let scheme = c.scheme?.lowercased(), let host = c.host, !host.isEmpty else {
            throw .unplayable(shown, "is not a URL: give rtmp://host[:port]/app/stream, srt://host:port or rtp://host:port")
        }
        switch scheme {
        case "rtmp", "rtmps":
            guard c.path.split(separator: "/").count >= 2 else {
                throw .unplayable(shown, "names no application and stream: rtmp://host[:port]/app/stream")
            }
            kind = .rtmp
        case "srt":
            guard c.port != nil else { throw .unplayable(shown, "has no port: srt://host:port") }
            kind = .srt
        case "rtp":
            guard c.port != nil else { throw .unplayable(shown, "has no port: rtp://host:port") }
            kind = .rtp
        default:
            throw .unplayable(shown, "is not a live source: give rtmp://, rtmps://, srt:// or rtp://")
        }
        if let port = c.port, !(1...65535).contains(port) { throw .unplayable(shown, "has port \(port), out of range") }
        url = text
    }

    /// The URL without what may be secret (stream name, passphrases in the query).
    public var description: String { RelayDestination.redact(url) }

    /// The source element, and the property that takes the URL.
    var element: (factory: String, property: String) {
        switch kind {
        case .rtmp: ("rtmp2src", "location")
        case .srt: ("srtsrc", "uri")
        case .rtp: ("rtpsrc", "uri")
        }
    }
}
