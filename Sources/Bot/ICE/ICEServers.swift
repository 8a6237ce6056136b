public import Foundation

/// The STUN and TURN servers a participant's webrtcbin uses, with the TURN credentials and the
/// ICE transport policy (WebRTC's `iceServers` and `iceTransportPolicy`).
///
/// Its `description` names servers and the kind of credential only: the password and the
/// shared secret never reach a log, a job status or an error.
public struct ICEServers: Sendable, CustomStringConvertible {
    /// WebRTC's `iceTransportPolicy`: `relay` offers and uses relayed candidates only.
    public enum Policy: String, Sendable, CaseIterable { case all, relay }

    public enum Credential: Sendable {
        case none
        /// A TURN user and password (coturn's `user=` or a long-term credential).
        case password(username: String, password: String)
        /// coturn's REST API (`use-auth-secret`): each webrtcbin gets `expiry:user` and
        /// base64(HMAC-SHA1(secret, username)), valid for `lifetime` from when it is made.
        case sharedSecret(TURNSharedSecret)
    }

    public var servers: [ICEServer] = []
    public var credential: Credential = .none
    public var policy: Policy = .all

    public init(servers: [ICEServer] = [], credential: Credential = .none, policy: Policy = .all) {
        self.servers = servers
        self.credential = credential
        self.policy = policy
    }

    public var isEmpty: Bool { servers.isEmpty && policy == .all }

    /// webrtcbin's `stun-server` (it takes one): `stun://host:port`.
    public var stunURI: String? {
        servers.first { $0.scheme == .stun }.map { "stun://\($0.hostPort)" }
    }

    /// The TURN URIs webrtcbin's `add-turn-server` takes, `turn://user:password@host:port?transport=…`,
    /// with credentials made now (a shared secret's expire `lifetime` after `now`).
    public func turnURIs(now: Date = Date()) -> [String] {
        let turn = servers.filter { $0.scheme != .stun }
        guard !turn.isEmpty else { return [] }
        let user: String, password: String
        switch credential {
        case .none: return []
        case .password(let u, let p): (user, password) = (u, p)
        case .sharedSecret(let s): (user, password) = s.credential(now: now)
        }
        // webrtcbin parses the URI: user and password percent-encoded whole (`:` and `/` in a
        // REST password's base64 would split it).
        let escape = { (s: String) in s.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? s }
        return turn.map { s in
            "\(s.scheme == .turns ? "turns" : "turn")://\(escape(user)):\(escape(password))@\(s.hostPort)"
                + (s.transport.map { "?transport=\($0.rawValue)" } ?? "")
        }
    }

    /// Servers, credential kind and policy; never a password or secret.
    public var description: String {
        let kind = switch credential {
        case .none: "no TURN credentials"
        case .password(let user, _): "TURN user \(user)"
        case .sharedSecret(let s): "TURN shared secret for \(s.user)"
        }
        return "ICE servers [\(servers.map(\.description).joined(separator: ", "))], \(kind), policy \(policy.rawValue)"
    }
}

/// One `stun:`, `turn:` or `turns:` URL (RFC 7064/7065), as WebRTC's `iceServers.urls` holds it.
public struct ICEServer: Sendable, Equatable, CustomStringConvertible {
    public enum Scheme: String, Sendable { case stun, turn, turns }
    public enum Transport: String, Sendable { case udp, tcp }

    public let scheme: Scheme
    public let host: String
    public let port: Int
    public let transport: Transport?

    /// Parses `stun:host[:port]`, `turn:host[:port][?transport=udp|tcp]`, `turns:…` (the
    /// `//` form and IPv6 in brackets too). A user or password in the URL is refused: they go
    /// in their own options, which are never shown.
    public init(parsing url: String) throws(ICEConfigError) {
        guard let colon = url.firstIndex(of: ":"), let scheme = Scheme(rawValue: url[..<colon].lowercased()) else {
            throw .badURL(url, "must start with stun:, turn: or turns:")
        }
        var rest = Substring(url[url.index(after: colon)...])
        if rest.hasPrefix("//") { rest = rest.dropFirst(2) }
        guard !rest.contains("@") else { throw .badURL(scheme.rawValue + ":…", "holds credentials: give them with --turn-username/--turn-password or a file") }
        var transport: Transport?
        if let q = rest.firstIndex(of: "?") {
            let query = rest[rest.index(after: q)...]
            rest = rest[..<q]
            guard scheme != .stun, query.hasPrefix("transport="), let t = Transport(rawValue: String(query.dropFirst("transport=".count)).lowercased()) else {
                throw .badURL(url, "the only query is ?transport=udp|tcp, on turn: and turns:")
            }
            transport = t
        }
        var host = rest, portText: Substring?
        if rest.hasPrefix("["), let close = rest.firstIndex(of: "]") {
            host = rest[...close]
            let after = rest[rest.index(after: close)...]
            if after.hasPrefix(":") { portText = after.dropFirst() } else if !after.isEmpty { throw .badURL(url, "junk after the address") }
        } else if let c = rest.lastIndex(of: ":") {
            host = rest[..<c]
            portText = rest[rest.index(after: c)...]
        }
        guard !host.isEmpty, host.allSatisfy({ $0.isLetter || $0.isNumber || "-.[]:".contains($0) }) else { throw .badURL(url, "no host") }
        let port = portText.map { Int($0) } ?? (scheme == .turns ? 5349 : 3478)
        guard let port, (1...65535).contains(port) else { throw .badURL(url, "bad port") }
        if scheme == .turns { throw .turnsUnsupported }
        self.scheme = scheme
        self.host = String(host)
        self.port = port
        self.transport = transport
    }

    var hostPort: String { "\(host):\(port)" }

    public var description: String { "\(scheme.rawValue):\(hostPort)" + (transport.map { "?transport=\($0.rawValue)" } ?? "") }
}

/// A bad ICE server setting, in words that say what to change. Never holds a credential.
public struct ICEConfigError: Error, CustomStringConvertible, Sendable, Equatable {
    private enum Kind: Equatable, Sendable {
        case badURL(String, String)
        case turnsUnsupported
        case noCredentials
        case credentialsWithoutTURN
        case twoSTUNServers
        case relayWithoutTURN
    }
    private let kind: Kind

    static func badURL(_ url: String, _ why: String) -> Self { .init(kind: .badURL(url, why)) }
    /// libnice (0.1.21, as in Debian 12) does no TLS to a TURN server: for `turns:` it opens plain
    /// TCP (agent.c wraps TURN-TLS only in a fixed fake handshake for Google/MS-OC modes), so
    /// the certificate could not be checked at all. Refused rather than silently unencrypted.
    public static let turnsUnsupported = Self(kind: .turnsUnsupported)
    public static let noCredentials = Self(kind: .noCredentials)
    public static let credentialsWithoutTURN = Self(kind: .credentialsWithoutTURN)
    public static let twoSTUNServers = Self(kind: .twoSTUNServers)
    public static let relayWithoutTURN = Self(kind: .relayWithoutTURN)

    public var description: String {
        switch kind {
        case .badURL(let url, let why): "--ice-server \(url): \(why)"
        case .turnsUnsupported:
            "--ice-server turns:…: TURN over TLS is not available: libnice (webrtcbin's ICE) sends TURN to a turns: server over plain TCP and cannot check its certificate. Use turn:HOST:PORT?transport=tcp (media stays DTLS-SRTP encrypted end to end), or turn:…?transport=udp"
        case .noCredentials: "a turn: server needs credentials: --turn-username with --turn-password or --turn-credentials-file, or --turn-secret-file"
        case .credentialsWithoutTURN: "TURN credentials given but no --ice-server turn:…"
        case .twoSTUNServers: "webrtcbin takes one STUN server: give one --ice-server stun:…"
        case .relayWithoutTURN: "--ice-transport-policy relay needs a TURN server (--ice-server turn:…)"
        }
    }
}

extension ICEServers {
    /// Checks the combination: credentials for TURN, one STUN server, relay only with TURN.
    public func validate() throws(ICEConfigError) {
        let turn = servers.contains { $0.scheme != .stun }
        if servers.filter({ $0.scheme == .stun }).count > 1 { throw .twoSTUNServers }
        if turn, case .none = credential { throw .noCredentials }
        if !turn, !(credential.isNone) { throw .credentialsWithoutTURN }
        if policy == .relay, !turn { throw .relayWithoutTURN }
    }
}

extension ICEServers.Credential {
    var isNone: Bool { if case .none = self { true } else { false } }
}
