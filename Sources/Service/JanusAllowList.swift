import Foundation
#if canImport(Glibc)
import Glibc
#endif

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
                throw ServeError("\(url) is not a Janus WebSocket URL this service can use: ws:// or wss://, a host name, IPv4 address or IPv6 literal in brackets (no user:password@, no zone), a port of 1 to 65535")
            }
            normal.append(n)
        }
        self.urls = normal
    }

    /// Whether jobs may use `url`.
    public func allows(_ url: String) -> Bool { Self.normal(url).map(urls.contains) ?? false }

    /// `scheme://host:port/path` with the scheme and host lowercased, an IPv6 literal in its
    /// RFC 5952 form (`[0:0:0:0:0:0:0:1]` → `[::1]`) and the default port written out, so
    /// `ws://Janus:80/` and `ws://janus/` are one; nil for anything the WebSocket client would
    /// not connect to as written: another scheme, no host, a userinfo (`ws://user:pw@host`), an
    /// IPv6 zone (`%25eth0`), a query or fragment. Names and addresses are compared as written:
    /// `ws://localhost` does not match `ws://127.0.0.1`, nor `[::ffff:127.0.0.1]` `127.0.0.1`.
    public static func normal(_ text: String) -> String? {
        guard text.utf8.count <= JobSpec.maxFieldBytes, let c = URLComponents(string: text), let scheme = c.scheme?.lowercased(),
              scheme == "ws" || scheme == "wss", let written = c.host?.lowercased(), let host = canonicalHost(written),
              c.user == nil, c.password == nil, c.query == nil, c.fragment == nil else { return nil }
        let port = c.port ?? (scheme == "wss" ? 443 : 80)
        guard (1...65535).contains(port) else { return nil }
        let path = c.percentEncodedPath.isEmpty ? "/" : c.percentEncodedPath
        return "\(scheme)://\(host):\(port)\(path)"
    }

    /// A name or IPv4 address as written (letters, digits, `.-_`), an IPv6 literal bracketed in
    /// the form `inet_ntop` prints; nil for anything else.
    static func canonicalHost(_ host: String) -> String? {
        if host.hasPrefix("[") {
            guard host.hasSuffix("]"), host.count > 2 else { return nil }
            var address = in6_addr()
            guard inet_pton(AF_INET6, String(host.dropFirst().dropLast()), &address) == 1 else { return nil }
            var out = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            guard inet_ntop(AF_INET6, &address, &out, socklen_t(out.count)) != nil else { return nil }
            return "[\(String(decoding: out.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))]"
        }
        guard !host.isEmpty, host.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == "_") }) else { return nil }
        return host
    }
}
