import Foundation

/// The Janus servers jobs may use: `--janus` and every `--janus-allow`. A job naming any other
/// is refused before a connection is made, so a client holding the token can neither point
/// the service (and the Janus credentials it sends) at a host of its choosing nor use it to
/// probe which ports answer. Every allowed Janus gets the same `--api-secret`/`--janus-token`.
public struct JanusAllowList: Sendable {
    /// The URLs in their normal form (see `normal`).
    public let urls: [String]

    public init(_ urls: [String]) throws(ServeError) {
        var normal: [String] = []
        for url in urls {
            guard let n = Self.normal(url) else {
                throw ServeError("\(url) is not a Janus WebSocket URL this service can use: ws:// or wss://, a host (no user:password@, no IPv6 literal), a port of 1 to 65535")
            }
            normal.append(n)
        }
        self.urls = normal
    }

    /// Whether jobs may use `url`.
    public func allows(_ url: String) -> Bool { Self.normal(url).map(urls.contains) ?? false }

    /// `scheme://host:port/path` with the scheme and host lowercased and the default port
    /// written out, so `ws://Janus:80/` and `ws://janus/` are one; nil for anything the
    /// WebSocket client would not connect to as written: another scheme, no host, a userinfo
    /// (`ws://user:pw@host`, which it would read as host `user`), an IPv6 literal (which it
    /// would read as host `[`), a query or fragment.
    public static func normal(_ text: String) -> String? {
        guard text.utf8.count <= JobSpec.maxFieldBytes, let c = URLComponents(string: text), let scheme = c.scheme?.lowercased(),
              scheme == "ws" || scheme == "wss", let host = c.host?.lowercased(), !host.isEmpty,
              c.user == nil, c.password == nil, c.query == nil, c.fragment == nil,
              !text.contains("["), !host.contains(":"), !host.contains("%"),
              host.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == "_") }) else { return nil }
        let port = c.port ?? (scheme == "wss" ? 443 : 80)
        guard (1...65535).contains(port) else { return nil }
        let path = c.percentEncodedPath.isEmpty ? "/" : c.percentEncodedPath
        return "\(scheme)://\(host):\(port)\(path)"
    }
}
