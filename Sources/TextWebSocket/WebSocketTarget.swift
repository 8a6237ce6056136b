import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where a WebSocket URL leads, read with URLComponents (RFC 3986): a host name, an IPv4
/// address or an IPv6 literal in brackets, the port (80 or 443 by default), the request target.
struct WebSocketTarget: Sendable, Equatable {
    /// `wss://` (or `https://`): TLS before the upgrade.
    let secure: Bool
    /// What to connect to: a name, an IPv4 address, or an IPv6 address without its brackets.
    let host: String
    let port: Int
    /// An IP address rather than a name: TLS sends no SNI (RFC 6066 forbids it) and checks the
    /// certificate against the address connected to.
    let isAddress: Bool
    /// `Host:` (RFC 9110): an IPv6 address in brackets, the port when the URL names one.
    let hostHeader: String
    /// `Origin:` as the client before this one sent it (scheme://host).
    let origin: String
    /// The request target: the path ("/" when empty) and the query.
    let requestURI: String

    /// Why a URL names no place this client connects to.
    struct Refused: Error {
        let reason: String
    }

    init(_ url: String) throws(Refused) {
        guard let c = URLComponents(string: url), let written = c.host, !written.isEmpty else { throw Refused(reason: "not a URL with a host") }
        // Credentials belong in the protocol (Janus's token, STOMP's CONNECT), not in a URL
        // that ends up in logs and job records.
        if c.user != nil || c.password != nil { throw Refused(reason: "a user or password in the URL (user:password@) is not supported") }
        switch c.scheme?.lowercased() {
        case "ws", "http": secure = false
        case "wss", "https": secure = true
        default: throw Refused(reason: "not a ws:// or wss:// URL")
        }
        port = c.port ?? (secure ? 443 : 80)
        guard (1...65535).contains(port) else { throw Refused(reason: "the port must be 1 to 65535") }
        if written.hasPrefix("[") {
            // URLComponents keeps the brackets; a zone ("%25eth0") is percent-encoded.
            let inside = String(written.dropFirst().dropLast())
            let address = inside.split(separator: "%", maxSplits: 1).first.map(String.init) ?? ""
            guard written.hasSuffix("]"), let canonical = IPAddress.canonicalIPv6(address) else {
                throw Refused(reason: "\(written) is not an IPv6 address")
            }
            host = inside
            isAddress = true
            hostHeader = "[\(canonical)]" + (c.port.map { ":\($0)" } ?? "")
        } else {
            host = written
            isAddress = IPAddress.isIPv4(written)
            hostHeader = written + (c.port.map { ":\($0)" } ?? "")
        }
        origin = "\(c.scheme?.lowercased() ?? "ws")://\(written)"
        let path = c.percentEncodedPath.isEmpty ? "/" : c.percentEncodedPath
        requestURI = path + (c.percentEncodedQuery.map { "?\($0)" } ?? "")
    }
}

/// Textual IP addresses through the C library's own parser and printer (the forms the
/// resolver accepts), so two spellings of one address compare equal.
enum IPAddress {
    /// The RFC 5952 form of an IPv6 address (`0:0:0:0:0:0:0:1` → `::1`); nil if not one.
    static func canonicalIPv6(_ text: String) -> String? {
        var address = in6_addr()
        guard inet_pton(AF_INET6, text, &address) == 1 else { return nil }
        var out = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard inet_ntop(AF_INET6, &address, &out, socklen_t(out.count)) != nil else { return nil }
        return String(decoding: out.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Whether `text` is a dotted-quad IPv4 address.
    static func isIPv4(_ text: String) -> Bool {
        var address = in_addr()
        return inet_pton(AF_INET, text, &address) == 1
    }
}
