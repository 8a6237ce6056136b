import Bot
import Foundation
import Testing

/// `--ice-server` URLs, TURN credentials as webrtcbin takes them, and what may be shown of them.
@Suite struct ICEServersTests {
    @Test("stun:, turn: and ?transport= parse as WebRTC's iceServers write them; defaults fill the port")
    func parsing() throws {
        let t = try ICEServer(parsing: "turn:turn.example.org?transport=tcp")
        #expect(t.scheme == .turn && t.host == "turn.example.org" && t.port == 3478 && t.transport == .tcp)
        let s = try ICEServer(parsing: "stun:127.0.0.1:19302")
        #expect(s.scheme == .stun && s.port == 19302 && s.transport == nil)
        let v6 = try ICEServer(parsing: "turn://[::1]:3479?transport=udp")
        #expect(v6.host == "[::1]" && v6.port == 3479 && v6.transport == .udp)
    }

    @Test("broken URLs and credentials inside a URL are refused, naming the option and never the password",
          arguments: ["http://x", "turn:", "turn:h:0", "turn:h:99999", "turn:h?transport=sctp", "stun:h?transport=tcp", "turn:u:hunter2@h:3478"])
    func refused(url: String) {
        #expect(throws: ICEConfigError.self) { try ICEServer(parsing: url) }
        do { _ = try ICEServer(parsing: url) } catch { #expect(error.description.contains("--ice-server") && !error.description.contains("hunter2")) }
    }

    @Test("turns: parses (port 5349, TLS over TCP only) and reaches libnice only through its bridge, never as turns://")
    func turnsBridged() throws {
        let t = try ICEServer(parsing: "turns:turn.example.org")
        #expect(t.scheme == .turns && t.port == 5349)
        #expect(throws: ICEConfigError.self) { try ICEServer(parsing: "turns:turn.example.org?transport=udp") }
        let ice = ICEServers(servers: [t, try ICEServer(parsing: "turn:h:3478?transport=udp")],
                             credential: .password(username: "bot", password: "hunter2"), policy: .relay, caFile: "/etc/sfubot/turn-ca.pem")
        try ice.validate()
        // Without a bridge it is left out (libnice would send its Allocate in the clear).
        #expect(ice.turnURIs() == ["turn://bot:hunter2@h:3478?transport=udp"])
        #expect(ice.turnURIs(bridged: { $0 == t ? 40123 : nil }) == ["turn://bot:hunter2@127.0.0.1:40123?transport=tcp", "turn://bot:hunter2@h:3478?transport=udp"])
        #expect(ice.description.contains("turns:turn.example.org:5349") && ice.description.contains("/etc/sfubot/turn-ca.pem") && !ice.description.contains("hunter2"))
        #expect(ICEServers(servers: [t], credential: .password(username: "u", password: "p")).description.contains("the system's CAs"))
    }

    @Test("--turn-ca-file must exist and hold PEM certificates: otherwise an error naming the option and the file")
    func caFileChecked() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sfubot-ca-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let garbage = dir.appendingPathComponent("garbage.pem")
        try Data("-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n".utf8).write(to: garbage)
        let empty = dir.appendingPathComponent("empty.pem")
        try Data("no certificate here\n".utf8).write(to: empty)
        let fifo = dir.appendingPathComponent("fifo.pem").path
        #expect(mkfifo(fifo, 0o600) == 0)
        for path in ["/nonexistent/ca.pem", dir.path, garbage.path, empty.path, fifo] {
            do {
                try ICEServers(caFile: path).checkCAFile()
                Issue.record("\(path) was taken as a CA file")
            } catch {
                #expect(error.description.hasPrefix("--turn-ca-file \(path): "), "\(error)")
            }
        }
        try ICEServers().checkCAFile()
    }

    @Test("coturn REST credentials: EXPIRY:USER and base64(HMAC-SHA1(secret, username)), a known answer from Python's hmac")
    func sharedSecret() {
        #expect(TURNSharedSecret.password(username: "1700086400:sfubot", secret: Array("north-wind".utf8)) == "lBebian4YxfKmulwZXBt5dHTXUM=")
        let s = TURNSharedSecret(secret: Array("north-wind".utf8), user: "sfubot", lifetime: .seconds(86_400))
        let c = s.credential(now: Date(timeIntervalSince1970: 1_700_000_000))
        #expect(c.username == "1700086400:sfubot" && c.password == "lBebian4YxfKmulwZXBt5dHTXUM=")
    }

    @Test("TURN URIs carry percent-encoded credentials and the transport; the description shows neither password nor secret")
    func urisAndRedaction() throws {
        let ice = ICEServers(servers: [try ICEServer(parsing: "stun:127.0.0.1:3478"), try ICEServer(parsing: "turn:127.0.0.1:3478?transport=tcp")],
                             credential: .password(username: "bot", password: "p:w/hunter2"), policy: .relay)
        try ice.validate()
        #expect(ice.stunURI == "stun://127.0.0.1:3478")
        #expect(ice.turnURIs() == ["turn://bot:p%3Aw%2Fhunter2@127.0.0.1:3478?transport=tcp"])
        #expect(!ice.description.contains("hunter2") && ice.description.contains("relay"))
        let secret = ICEServers(servers: [try ICEServer(parsing: "turn:h")], credential: .sharedSecret(.init(secret: Array("north-wind".utf8), user: "rec")))
        #expect(!secret.description.contains("north-wind") && !"\(secret)".contains("north-wind"))
        // REST passwords are base64: '/', '+' and '=' must not split webrtcbin's URI.
        let uri = try #require(secret.turnURIs(now: Date(timeIntervalSince1970: 1_700_000_000)).first)
        #expect(uri.hasPrefix("turn://") && !uri.dropFirst(7).contains("/") && uri.hasSuffix("@h:3478"))
    }

    @Test("combinations: TURN needs credentials, relay needs TURN, one STUN server")
    func combinations() throws {
        let turn = try ICEServer(parsing: "turn:h"), stun = try ICEServer(parsing: "stun:h")
        #expect(throws: ICEConfigError.noCredentials) { try ICEServers(servers: [turn]).validate() }
        #expect(throws: ICEConfigError.relayWithoutTURN) { try ICEServers(servers: [stun], policy: .relay).validate() }
        #expect(throws: ICEConfigError.twoSTUNServers) { try ICEServers(servers: [stun, stun]).validate() }
        #expect(throws: ICEConfigError.credentialsWithoutTURN) { try ICEServers(servers: [stun], credential: .password(username: "u", password: "p")).validate() }
    }
}
