import Foundation

/// `--relay-allow`: where relay jobs may send a call's decrypted media. A relay is the one job
/// whose output leaves the machine, so nothing is allowed unless the operator named it: an
/// entry is a destination URL's scheme, host and port, and, if it has one, a path the
/// destination's path must start with (`rtmp://live.example:1935/app` allows every stream of
/// `app` there). Names and addresses are compared as written, as `--janus-allow` compares.
public struct RelayAllowList: Sendable {
    struct Entry: Sendable, Equatable {
        var scheme: String, host: String, port: Int, path: String
    }

    let entries: [Entry]
    /// The entries as given, for messages (never a stream name: an entry is the operator's).
    public let urls: [String]

    /// No destination: relay jobs refused (serve without `--relay-allow`).
    public init() {
        entries = []
        urls = []
    }

    public init(_ urls: [String]) throws(ServeError) {
        var entries: [Entry] = []
        for url in urls {
            guard let entry = Self.entry(url, destination: false) else {
                throw ServeError("--relay-allow \(url): give a destination's scheme, host and port, e.g. rtmp://live.example:1935/app, srt://10.0.0.5:9000, rtp://10.0.0.6:5004 or wss://asr.example/speakers")
            }
            entries.append(entry)
        }
        self.entries = entries
        self.urls = urls
    }

    /// Whether a relay may send to `to` (a destination `RelayDestination` accepted).
    public func allows(_ to: String) -> Bool {
        guard let d = Self.entry(to, destination: true) else { return false }
        return entries.contains { e in
            e.scheme == d.scheme && e.host == d.host && e.port == d.port
                && (e.path.isEmpty || d.path == e.path || d.path.hasPrefix(e.path.hasSuffix("/") ? e.path : e.path + "/"))
        }
    }

    /// Scheme, host (lowercased, brackets kept off) and port (the scheme's default written out).
    private static func entry(_ text: String, destination: Bool) -> Entry? {
        // A speaker stream's `{participant}` is not a URL character: a path segment like any other.
        let text = text.replacingOccurrences(of: "{participant}", with: "%7Bparticipant%7D")
        guard let c = URLComponents(string: text), let scheme = c.scheme?.lowercased(), let host = c.host?.lowercased(), !host.isEmpty,
              c.user == nil, c.password == nil else { return nil }
        let defaults = ["rtmp": 1935, "rtmps": 443, "ws": 80, "wss": 443]
        guard ["rtmp", "rtmps", "srt", "rtp", "srtp", "ws", "wss"].contains(scheme), let port = c.port ?? defaults[scheme], (1...65535).contains(port) else { return nil }
        // An entry's query would say nothing a destination must match (an SRTP key is the job's).
        if !destination, c.query != nil { return nil }
        let bare = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        return Entry(scheme: scheme, host: bare, port: port, path: c.path)
    }
}
