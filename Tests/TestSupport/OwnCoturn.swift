public import Foundation

/// A coturn of the test's own (deploy/coturn/coturnctl), inside the test namespace: its own
/// port and relay-port range, one kind of credential (coturn takes a shared secret or static
/// users, not both).
public final class OwnCoturn: Sendable {
    public enum Auth: Sendable {
        /// `use-auth-secret` with this static-auth-secret (REST API credentials).
        case sharedSecret(String)
        /// `lt-cred-mech` with one static user.
        case user(String, password: String)
    }

    /// TURN over TLS (turns:): coturn's `tls-listening-port` with this certificate and key.
    public struct TLS: Sendable {
        public let port: Int
        public let cert: String
        public let key: String
        public init(port: Int, cert: String, key: String) {
            self.port = port
            self.cert = cert
            self.key = key
        }
    }

    public let port: Int
    public let tls: TLS?
    /// coturn's relay ports: relayed packets to Janus come from these.
    public let relayPorts: ClosedRange<Int>
    public let auth: Auth
    private let dir: URL

    /// `turn:127.0.0.1:PORT?transport=udp|tcp` (without a transport webrtcbin tries both).
    public func url(tcp: Bool = false) -> String { "turn:127.0.0.1:\(port)?transport=" + (tcp ? "tcp" : "udp") }

    public init(port: Int, relayPorts: ClosedRange<Int>, auth: Auth, tls: TLS? = nil, in dir: URL) async throws {
        self.port = port
        self.tls = tls
        self.relayPorts = relayPorts
        self.auth = auth
        self.dir = dir
        try await coturnctl("start")
    }

    /// Runs `body` with a coturn of its own, stopped after it, also when it throws.
    public static func with<T>(port: Int, relayPorts: ClosedRange<Int>, auth: Auth, tls: TLS? = nil, in dir: URL,
                               _ body: (OwnCoturn) async throws -> T) async throws -> T {
        let coturn = try await OwnCoturn(port: port, relayPorts: relayPorts, auth: auth, tls: tls, in: dir)
        do {
            let result = try await body(coturn)
            await coturn.stop()
            return result
        } catch {
            await coturn.stop()
            throw error
        }
    }

    public func stop() async { try? await coturnctl("stop") }
    public func kill9() async throws { try await coturnctl("kill") }
    public func restart() async throws { try await coturnctl("start") }

    /// A self-signed certificate (P-256, valid a day) for `names` (DNS or IP subjectAltNames)
    /// and its key, made with openssl in `dir` as `NAME.pem` and `NAME.key`: coturn's `cert`
    /// and `pkey`, and the CA file that trusts it.
    public static func selfSigned(_ name: String, for names: [String], in dir: URL) async throws -> (cert: String, key: String) {
        let cert = dir.appendingPathComponent("\(name).pem").path, key = dir.appendingPathComponent("\(name).key").path
        let san = names.map { $0.first?.isNumber == true ? "IP:\($0)" : "DNS:\($0)" }.joined(separator: ",")
        let run = try await ChildProcess.run("/usr/bin/openssl", [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1",
            "-keyout", key, "-out", cert, "-subj", "/CN=\(names.first ?? name)", "-addext", "subjectAltName=\(san)"])
        guard run.status == 0 else { throw PipelineRunError(message: "openssl req failed (\(run.status)): \(run.errText)") }
        return (cert, key)
    }

    /// Writes a secret as coturnctl reads it: a file only its owner can read.
    public static func secretFile(_ text: String, named name: String, in dir: URL) throws -> String {
        let path = dir.appendingPathComponent(name).path
        _ = FileManager.default.createFile(atPath: path, contents: Data((text + "\n").utf8), attributes: [.posixPermissions: 0o600])
        return path
    }

    private func coturnctl(_ verb: String) async throws {
        var env = ProcessInfo.processInfo.environment
        env["SFUBOT_RUN_DIR"] = dir.path
        env["TURN_PORT"] = "\(port)"
        env["TURN_RELAY_PORTS"] = "\(relayPorts.lowerBound)-\(relayPorts.upperBound)"
        switch auth {
        case .sharedSecret(let secret):
            env["TURN_AUTH"] = "secret"
            env["TURN_SECRET_FILE"] = try Self.secretFile(secret, named: "coturn-secret", in: dir)
        case .user(let user, let password):
            env["TURN_AUTH"] = "user"
            env["TURN_USER"] = user
            env["TURN_PASSWORD_FILE"] = try Self.secretFile(password, named: "coturn-password", in: dir)
        }
        if let tls {
            env["TURN_TLS_PORT"] = "\(tls.port)"
            env["TURN_CERT"] = tls.cert
            env["TURN_KEY"] = tls.key
        }
        let run = try await ChildProcess.run(FileManager.default.currentDirectoryPath + "/deploy/coturn/coturnctl", [verb], environment: env)
        guard run.status == 0 else { throw PipelineRunError(message: "coturnctl \(verb) failed (\(run.status)): \(run.errText)") }
    }
}

/// A firewall between the bots and one Janus's RTP ports, as a corporate network has: UDP to
/// and from Janus's RTP range is dropped unless it comes from or goes to coturn's relay
/// ports. Each rule counts what it matched: `direct` is what the firewall dropped (a bot trying
/// Janus directly, or Janus trying a bot), `relayed` what coturn carried to Janus; two rules
/// only count what reached coturn's own port over UDP and over TCP, and one its TLS port
/// (`tlsPort`) (how the bots reached it: GStreamer 1.22's stats do not say).
public final class RelayOnlyFirewall: Sendable {
    private let rules: [(name: String, rule: [String])]

    /// Puts the rules in INPUT (all traffic between local addresses passes INPUT on `lo`).
    public init(janusRTP: ClosedRange<Int>, relayPorts: ClosedRange<Int>, turnPort: Int, tlsPort: Int? = nil) async throws {
        let janus = "\(janusRTP.lowerBound):\(janusRTP.upperBound)", relay = "\(relayPorts.lowerBound):\(relayPorts.upperBound)"
        var all: [(name: String, rule: [String])] = tlsPort.map { [("turnTLS", ["-p", "tcp", "--dport", "\($0)", "-m", "comment", "--comment", "sfubot-turn-count-tls-\(janus)"])] } ?? []
        all += [
            ("turnUDP", ["-p", "udp", "--dport", "\(turnPort)", "-m", "comment", "--comment", "sfubot-turn-count-udp-\(janus)"]),
            ("turnTCP", ["-p", "tcp", "--dport", "\(turnPort)", "-m", "comment", "--comment", "sfubot-turn-count-tcp-\(janus)"]),
            ("relayed", ["-p", "udp", "--dport", janus, "--sport", relay, "-m", "comment", "--comment", "sfubot-turn-relayed-\(janus)", "-j", "ACCEPT"]),
            ("fromRelay", ["-p", "udp", "--sport", janus, "--dport", relay, "-m", "comment", "--comment", "sfubot-turn-to-relay-\(janus)", "-j", "ACCEPT"]),
            ("directIn", ["-p", "udp", "--dport", janus, "-m", "comment", "--comment", "sfubot-turn-direct-in-\(janus)", "-j", "DROP"]),
            ("directOut", ["-p", "udp", "--sport", janus, "-m", "comment", "--comment", "sfubot-turn-direct-out-\(janus)", "-j", "DROP"]),
        ]
        rules = all
        var added: [[String]] = []
        for (_, rule) in rules {
            let r = try await Self.iptables(["-A", "INPUT"] + rule)
            guard r.status == 0 else {
                for a in added { _ = try? await Self.iptables(["-D", "INPUT"] + a) }
                throw PipelineRunError(message: "iptables -A INPUT \(rule.joined(separator: " ")) failed: \(r.errText)")
            }
            added.append(rule)
        }
    }

    /// Packets each rule matched so far.
    public func counts() async throws -> Counts {
        let r = try await Self.iptables(["-L", "INPUT", "-v", "-n", "-x"])
        guard r.status == 0 else { throw PipelineRunError(message: "iptables -L failed: \(r.errText)") }
        func packets(_ name: String) -> Int {
            guard rules.contains(where: { $0.name == name }) else { return -1 }
            let comment = rules.first { $0.name == name }!.rule[rules.first { $0.name == name }!.rule.firstIndex(of: "--comment")! + 1]
            let line = r.outText.split(whereSeparator: \.isNewline).first { $0.contains("/* \(comment) */") }
            return line.flatMap { Int($0.split(whereSeparator: \.isWhitespace).first ?? "") } ?? -1
        }
        return Counts(relayed: packets("relayed"), fromRelay: packets("fromRelay"), directIn: packets("directIn"), directOut: packets("directOut"),
                      turnUDP: packets("turnUDP"), turnTCP: packets("turnTCP"), turnTLS: packets("turnTLS"))
    }

    public struct Counts: Sendable, CustomStringConvertible {
        /// Relayed by coturn to Janus, and from Janus to coturn's relay ports.
        public var relayed, fromRelay: Int
        /// Dropped: to Janus's RTP ports, and from them, not through coturn.
        public var directIn, directOut: Int
        /// Packets to coturn's listening port over UDP and over TCP.
        public var turnUDP, turnTCP: Int
        /// Packets to coturn's TLS port (-1: not counted).
        public var turnTLS = -1
        public var description: String {
            "relayed \(relayed) to Janus, \(fromRelay) back; dropped direct \(directIn) in, \(directOut) out; to coturn \(turnUDP) UDP, \(turnTCP) TCP"
                + (turnTLS >= 0 ? ", \(turnTLS) TLS" : "")
        }
    }

    /// Takes the rules out again; safe to call twice.
    public func remove() async {
        for (_, rule) in rules.reversed() {
            while (try? await Self.iptables(["-D", "INPUT"] + rule))?.status == 0 {}
        }
    }

    private static func iptables(_ args: [String]) async throws -> ChildProcess.Finished {
        guard let path = ["/usr/sbin/iptables", "/sbin/iptables"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw PipelineRunError(message: "iptables is not installed (scripts/install-deps installs it)")
        }
        return try await ChildProcess.run(path, ["-w"] + args)
    }
}
