import Foundation

/// Where `sfubot relay --to URL` sends one participant's decrypted media, parsed once.
///
/// - `rtmp://host[:port]/app/stream` (and `rtmps://`): FLV, H.264 as it came (not re-encoded),
///   Opus decoded and encoded to AAC (FLV has no Opus).
/// - `srt://host:port` (caller): MPEG-TS, the same H.264 and AAC.
/// - `rtp://host:port`: plain RTP as Janus's `rtp_forward` sends it: Opus (pt 111) to `port`,
///   H.264 (pt 96) to `port + 2` (the odd ports stay free for RTCP, as rtp_forward's habit).
/// - `srtp://host:port?key=BASE64`: the same RTP as SRTP (AES_CM_128_HMAC_SHA1_80, RFC 4568's
///   inline key: 16 bytes of key and 14 of salt, base64), for receivers that take SDES keys.
/// - `hls:DIR`: an HLS playlist (`index.m3u8`) and MPEG-TS segments in a folder of this
///   machine, the same H.264 and AAC, for a web server or CDN to serve.
public struct RelayDestination: Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable { case rtmp, srt, rtp, srtp, hls }

    public let kind: Kind
    /// The URL as given: handed to the sink, never logged whole (an RTMP stream name is
    /// often the stream's secret key).
    let url: String
    public let host: String
    public let port: Int
    /// SRTP: the master key and salt (30 bytes), as hex for the pipeline.
    let srtpKeyHex: String?

    /// RTP: the port of the video track (`port + 2`).
    public var videoPort: Int { port + 2 }

    public init(_ text: String) throws(BotError) {
        if text.lowercased().hasPrefix("hls:") {
            let folder = String(text.dropFirst(4))
            guard !folder.isEmpty, !folder.utf8.contains(0) else { throw .output("--to hls:DIR: name the folder for the playlist and its segments") }
            (kind, url, host, port, srtpKeyHex) = (.hls, URL(fileURLWithPath: folder).standardizedFileURL.path, "", 0, nil)
            return
        }
        guard let c = URLComponents(string: text), let scheme = c.scheme?.lowercased(), let host = c.host, !host.isEmpty else {
            throw .output("--to \(Self.redact(text)): not a URL; give rtmp://host[:port]/app/stream, srt://host:port or rtp://host:port")
        }
        let bare = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        var srtpKey: String?
        switch scheme {
        case "rtmp", "rtmps":
            let parts = c.path.split(separator: "/")
            guard parts.count >= 2 else {
                throw .output("--to \(Self.redact(text)): an RTMP URL names the application and the stream: rtmp://host[:port]/app/stream")
            }
            kind = .rtmp
            port = c.port ?? (scheme == "rtmps" ? 443 : 1935)
        case "srt":
            guard let p = c.port else { throw .output("--to \(Self.redact(text)): an SRT URL needs a port: srt://host:port") }
            kind = .srt
            port = p
        case "rtp":
            guard let p = c.port, p > 0, p + 2 <= 65535 else {
                throw .output("--to \(Self.redact(text)): an RTP URL needs a port below 65534: rtp://host:port (audio to port, video to port+2)")
            }
            kind = .rtp
            port = p
        case "srtp":
            guard let p = c.port, p > 0, p + 2 <= 65535 else {
                throw .output("--to \(Self.redact(text)): an SRTP URL needs a port below 65534: srtp://host:port?key=BASE64")
            }
            guard let given = c.queryItems?.first(where: { $0.name == "key" })?.value,
                  let key = Data(base64Encoded: given.replacingOccurrences(of: " ", with: "+")), key.count == 30 else {
                throw .output("--to \(Self.redact(text)): an SRTP URL needs ?key= with 30 bytes in base64 (16 of key, 14 of salt: AES_CM_128_HMAC_SHA1_80, as an SDP a=crypto inline key)")
            }
            kind = .srtp
            port = p
            srtpKey = key.map { String(format: "%02x", $0) }.joined()
        default:
            throw .output("--to \(Self.redact(text)): \(scheme):// is not a relay destination; give rtmp://, rtmps://, srt://, rtp://, srtp://, hls:DIR or ws://…/{participant}")
        }
        guard (1...65535).contains(port) else { throw .output("--to \(Self.redact(text)): port \(port) is out of range") }
        self.host = bare
        self.url = text
        srtpKeyHex = srtpKey
        // The sinks take an IPv6 literal without brackets in `host`, with them in a URL.
    }

    /// The destination without what may be secret (an RTMP stream name, SRT passphrases in
    /// the query): for logs, status and errors.
    public var description: String { kind == .hls ? "hls:\(url)" : Self.redact(url) }

    static func redact(_ text: String) -> String {
        guard var c = URLComponents(string: text), c.scheme != nil else { return "(not a URL)" }
        c.query = nil
        c.user = nil
        c.password = nil
        c.fragment = nil
        let parts = c.path.split(separator: "/", omittingEmptySubsequences: true)
        if parts.count >= 2 { c.path = "/" + parts.dropLast().joined(separator: "/") + "/***" }
        return c.string.map { $0.removingPercentEncoding ?? $0 } ?? "(not a URL)"
    }

    /// The output graph's placeholders (pipelines/relay-*.pipeline) for the `attempt`th try.
    /// HLS segments of a later try (after a failure: a full disk) get names of their own:
    /// hlssink2 counts from 0 again, and would overwrite what the earlier tries wrote.
    func pipelineValues(attempt: Int) -> [String: String] {
        switch kind {
        case .rtmp: ["location": url]
        case .srt: ["uri": url]
        case .rtp: ["host": host, "audio_port": String(port), "video_port": String(videoPort)]
        case .srtp: ["host": host, "audio_port": String(port), "video_port": String(videoPort), "key": srtpKeyHex ?? ""]
        case .hls: ["location": url + (attempt > 1 ? "/try\(attempt)-segment%05d.ts" : "/segment%05d.ts"), "playlist": url + "/index.m3u8"]
        }
    }
}
