import Foundation

/// `sfubot relay --to ws://HOST:PORT/path/{participant}` (or `wss://`): each speaker's audio,
/// live, for transcription, one WebSocket connection per participant (issue 43 item 2).
/// This file holds the pure part: the URL template and the protocol's text messages.
///
/// The protocol, per connection (docs/relay.md): one JSON text message `start` first, then
/// binary messages of PCM (s16le, mono, at `sample_rate`), then `left` as the last message
/// before the close when the participant left. `muted` and `speaking` may come between.
public struct SpeakerStreamDestination: Sendable, Equatable, CustomStringConvertible {
    /// The placeholder replaced by the participant id.
    public static let placeholder = "{participant}"

    /// The template as given: it may hold a token in its query; never logged whole.
    let template: String
    public let secure: Bool

    public init(_ text: String) throws(BotError) {
        let lower = text.lowercased()
        guard lower.hasPrefix("ws://") || lower.hasPrefix("wss://") else {
            throw .output("--to \(Self.redact(text)): a speaker stream URL starts with ws:// or wss://")
        }
        guard text.contains(Self.placeholder) else {
            throw .output("--to \(Self.redact(text)): put {participant} in the URL (e.g. ws://host:8765/speakers/{participant}): one connection is made per participant")
        }
        // The placeholder must leave a URL once replaced; checked with a harmless id.
        guard let c = URLComponents(string: text.replacingOccurrences(of: Self.placeholder, with: "p")), let host = c.host, !host.isEmpty else {
            throw .output("--to \(Self.redact(text)): not a URL; give ws://host[:port]/path/{participant}")
        }
        if let port = c.port, !(1...65535).contains(port) { throw .output("--to \(Self.redact(text)): port \(port) is out of range") }
        template = text
        secure = lower.hasPrefix("wss://")
    }

    /// The URL for one participant: the id percent-encoded as a path segment (a display-derived
    /// id may hold `/`, `?` or spaces; it must not change which resource is asked for).
    public func url(for participant: String) -> String {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "/?#")
        let id = participant.addingPercentEncoding(withAllowedCharacters: allowed) ?? "participant"
        return template.replacingOccurrences(of: Self.placeholder, with: id)
    }

    /// Listening (`--ws-listen`): the address to bind and the paths served.
    public var listenAddress: (host: String, port: Int)? {
        guard !secure, let c = URLComponents(string: template.replacingOccurrences(of: Self.placeholder, with: "p")), let host = c.host else { return nil }
        return (host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host, c.port ?? 80)
    }

    /// The path before and after `{participant}` (the query left out).
    private var pathParts: (String, String) {
        let path = URLComponents(string: template.replacingOccurrences(of: Self.placeholder, with: "%7Bparticipant%7D"))?.percentEncodedPath ?? ""
        let parts = path.components(separatedBy: "%7Bparticipant%7D")
        return (parts.first ?? "", parts.count > 1 ? parts[1] : "")
    }

    /// Listening: the participant a consumer asked for by connecting to `path`, nil if the path
    /// is not one of the template's.
    public func participant(inPath path: String) -> String? {
        let (before, after) = pathParts
        guard path.hasPrefix(before), path.hasSuffix(after), path.count > before.count + after.count else { return nil }
        let id = String(path.dropFirst(before.count).dropLast(after.count))
        guard !id.contains("/") else { return nil }
        return id.removingPercentEncoding ?? id
    }

    /// Listening: the index path (the template's path up to `{participant}`, without the
    /// trailing slash): a connection there is told who speaks and who left.
    public var indexPath: String {
        let before = pathParts.0
        return before.hasSuffix("/") ? String(before.dropLast()) : before
    }

    /// Scheme, host, port and path template: the query (often a token) left out.
    public var description: String { Self.redact(template) }

    static func redact(_ text: String) -> String {
        guard var c = URLComponents(string: text.replacingOccurrences(of: placeholder, with: "%7Bparticipant%7D")), c.scheme != nil else {
            return "(not a URL)"
        }
        c.query = nil
        c.user = nil
        c.password = nil
        c.fragment = nil
        return c.string.map { $0.removingPercentEncoding ?? $0 } ?? "(not a URL)"
    }
}

/// What `relay --to` (and a relay job's `to`) names: a live destination or speaker streams.
public enum RelayTarget: Sendable, CustomStringConvertible {
    case destination(RelayDestination)
    case speakers(SpeakerStreamDestination)

    public init(_ text: String) throws(BotError) {
        let lower = text.lowercased()
        self = lower.hasPrefix("ws://") || lower.hasPrefix("wss://") ? .speakers(try SpeakerStreamDestination(text)) : .destination(try RelayDestination(text))
    }

    /// Without what may be secret (a stream name, a token in the query).
    public var description: String {
        switch self {
        case .destination(let d): d.description
        case .speakers(let d): d.description
        }
    }
}

/// What a speaker stream's binary messages carry (`--ws-audio`): PCM, s16le mono at 16 kHz (the
/// default, what speech recognisers take) or 48 kHz (Opus's own rate, no resampling); or the
/// participant's Opus packets as they were sent (opened, not decoded: one per message).
public enum SpeakerStreamAudio: String, Sendable, CaseIterable {
    case pcm16k = "16k"
    case pcm48k = "48k"
    case opus

    public var sampleRate: Int { self == .pcm16k ? 16_000 : 48_000 }
    public var isPCM: Bool { self != .opus }
    /// The `format` of the start message.
    public var format: String { isPCM ? "s16le" : "opus" }
    /// Opus as WebRTC sends it is stereo in its SDP (`opus/48000/2`), whatever it holds.
    public var channels: Int { isPCM ? 1 : 2 }
    /// Bytes per second of PCM: the duration of what was sent.
    public var bytesPerSecond: Int { sampleRate * 2 }
}

/// The JSON text messages of a speaker stream.
public enum SpeakerStreamMessage: Sendable, Equatable {
    /// First on every connection. `mediaTime`: seconds from the relay's start to the first sample.
    case start(participant: String, display: String, audio: SpeakerStreamAudio, mediaTime: Double)
    /// true: no audio from the participant for a second (muted, or the sender stopped); false
    /// with the next audio.
    case muted(Bool)
    /// true: sound above the speech threshold after silence; false after 0.6 s below it.
    case speaking(Bool)
    /// Last before the close: the participant left the room.
    case left
    /// Listening, on the index connection: a participant whose stream can be connected to at `path`.
    case speaker(participant: String, display: String, path: String)
    /// Listening, on the index connection: the participant left.
    case gone(participant: String)

    /// One line of JSON, keys sorted (stable for consumers' logs and for tests).
    public var json: String {
        var object: [String: Any]
        switch self {
        case .start(let participant, let display, let audio, let mediaTime):
            object = ["type": "start", "participant": participant, "display": display, "sample_rate": audio.sampleRate,
                      "channels": audio.channels, "format": audio.format, "media_time": (mediaTime * 1000).rounded() / 1000]
        case .muted(let muted): object = ["type": "muted", "muted": muted]
        case .speaking(let speaking): object = ["type": "speaking", "speaking": speaking]
        case .left: object = ["type": "left"]
        case .speaker(let participant, let display, let path): object = ["type": "speaker", "participant": participant, "display": display, "path": path]
        case .gone(let participant): object = ["type": "left", "participant": participant]
        }
        // Only strings, numbers and booleans: serialization cannot fail.
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }
}
