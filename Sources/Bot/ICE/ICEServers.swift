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
    /// PEM certificates a `turns:` server's certificate must chain to (`--turn-ca-file`); nil:
    /// the system's trust store.
    public var caFile: String?
    /// Where `.password` credentials were read from (`--turn-credentials-file`): read again when
    /// the TURN server refuses them (`BotConfig.refreshedTURN`), so a rotated file is used.
    public var credentialsFile: String?

    public init(servers: [ICEServer] = [], credential: Credential = .none, policy: Policy = .all, caFile: String? = nil) {
        self.servers = servers
        self.credential = credential
        self.policy = policy
        self.caFile = caFile
    }

    public var isEmpty: Bool { servers.isEmpty && policy == .all }

    /// webrtcbin's `stun-server` (it takes one): `stun://host:port`.
    public var stunURI: String? {
        servers.first { $0.scheme == .stun }.map { "stun://\($0.hostPort)" }
    }

    /// The TURN URIs webrtcbin's `add-turn-server` takes, `turn://user:password@host:port?transport=…`,
    /// with credentials made now (a shared secret's expire `lifetime` after `now`). A `turns:`
    /// server becomes `turn://…@127.0.0.1:PORT?transport=tcp`, its bridge's port
    /// (`TURNTLSBridge`); without a bridge it is left out, never handed to libnice, which
    /// would send it TURN in the clear.
    public func turnURIs(now: Date = Date(), bridged: (ICEServer) -> Int? = { _ in nil }) -> [String] {
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
        return turn.compactMap { s in
            guard s.scheme == .turns else {
                return "turn://\(escape(user)):\(escape(password))@\(s.hostPort)" + (s.transport.map { "?transport=\($0.rawValue)" } ?? "")
            }
            return bridged(s).map { "turn://\(escape(user)):\(escape(password))@127.0.0.1:\($0)?transport=tcp" }
        }
    }

    /// Servers, credential kind and policy; never a password or secret.
    public var description: String {
        let kind = switch credential {
        case .none: "no TURN credentials"
        case .password(let user, _): "TURN user \(user)"
        case .sharedSecret(let s): "TURN shared secret for \(s.user)"
        }
        let trust = servers.contains { $0.scheme == .turns } ? ", turns: verified against \(caFile ?? "the system's CAs")" : ""
        return "ICE servers [\(servers.map(\.description).joined(separator: ", "))], \(kind), policy \(policy.rawValue)\(trust)"
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

    /// Parses `stun:host[:port]`, `turn:host[:port][?transport=udp|tcp]`, `turns:host[:port]`
    /// (the `//` form and IPv6 in brackets too). A user or password in the URL is refused: they go
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
            // TLS runs over TCP; TURN over DTLS is not offered.
            guard scheme != .turns || t == .tcp else { throw .badURL(url, "turns: is TLS over TCP: drop ?transport=udp (or use turn:…?transport=udp)") }
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
        case caFile(String, String, option: String)
        case bridge(String, String)
        case noCredentials
        case credentialsWithoutTURN
        case twoSTUNServers
        case relayWithoutTURN
    }
    private let kind: Kind

    static func badURL(_ url: String, _ why: String) -> Self { .init(kind: .badURL(url, why)) }
    static func caFile(_ path: String, _ why: String) -> Self { .init(kind: .caFile(path, why, option: "--turn-ca-file")) }
    static func bridge(_ server: String, _ why: String) -> Self { .init(kind: .bridge(server, why)) }
    public static let noCredentials = Self(kind: .noCredentials)
    public static let credentialsWithoutTURN = Self(kind: .credentialsWithoutTURN)
    public static let twoSTUNServers = Self(kind: .twoSTUNServers)
    public static let relayWithoutTURN = Self(kind: .relayWithoutTURN)

    /// The same error naming the setting the CA file came from (`turn_ca_file` in a config).
    func naming(_ option: String) -> Self {
        guard case .caFile(let path, let why, _) = kind else { return self }
        return .init(kind: .caFile(path, why, option: option))
    }

    public var description: String {
        switch kind {
        case .badURL(let url, let why): "--ice-server \(url): \(why)"
        case .caFile(let path, let why, let option): "\(option) \(path): \(why)"
        case .bridge(let server, let why): "TLS to \(server): \(why)"
        case .noCredentials: "a turn: server needs credentials: --turn-username with --turn-password or --turn-credentials-file, or --turn-secret-file"
        case .credentialsWithoutTURN: "TURN credentials given but no --ice-server turn:…"
        case .twoSTUNServers: "webrtcbin takes one STUN server: give one --ice-server stun:…"
        case .relayWithoutTURN: "--ice-transport-policy relay needs a TURN server (--ice-server turn:…)"
        }
    }
}

extension ICEServers {
    /// Checks the combination: credentials for TURN, one STUN server, relay only with TURN
    /// (unless `turnElsewhere`: the ECall agent's TURN servers come from `/credentials`).
    public func validate(turnElsewhere: Bool = false) throws(ICEConfigError) {
        let turn = servers.contains { $0.scheme != .stun }
        if servers.filter({ $0.scheme == .stun }).count > 1 { throw .twoSTUNServers }
        if turn, case .none = credential { throw .noCredentials }
        if !turn, !(credential.isNone) { throw .credentialsWithoutTURN }
        if policy == .relay, !turn, !turnElsewhere { throw .relayWithoutTURN }
    }
}

extension ICEServers.Credential {
    var isNone: Bool { if case .none = self { true } else { false } }
}
