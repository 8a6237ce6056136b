import Bot
import ECall
import FrameCrypto
import Foundation
import Logging

extension Agent {
    /// Logs in (asking for the code when there is no session yet), registers the device key,
    /// reads `/credentials` and connects STOMP.
    func connect(readOTP: @Sendable () -> String?) async throws(AgentError) -> Connections {
        let identity: DeviceIdentity
        do { identity = try DeviceIdentity(contentsOfFile: config.identity) } catch { throw .identity(error.description) }
        let client: ECallClient
        do {
            client = try ECallClient(configuration: .init(baseURL: config.api, apiID: config.apiId, apiSecret: config.apiSecret, sessionFile: config.session), logger: log)
        } catch { throw .backend(error.description) }
        do {
            if await client.session == nil {
                let who = LoginIdentity(email: config.email, phoneNumber: config.phoneNumber, displayName: config.displayName,
                                        publicKey: identity.publicKey.wire, identifier: "sfubot-\(identity.publicKey.hash.prefix(16))")
                _ = try await client.login(who)
                let code = config.otp ?? {
                    FileHandle.standardError.write(Data("sfubot agent: the login code sent to \(config.email ?? config.phoneNumber ?? ""): ".utf8))
                    return readOTP()?.trimmingCharacters(in: .whitespaces)
                }() ?? ""
                _ = try await client.verifyLogin(code: code, who)
            }
            try await client.registerDevice(publicKey: identity.publicKey.wire, publicKeyHash: identity.publicKey.hash)
        } catch { throw .backend(error.description) }
        guard let me = await client.session else { throw .backend("no session after login") }
        let credentials: Credentials
        do { credentials = try await client.credentials() } catch { throw .backend(error.description) }
        guard let url = Self.stompURL(config: config.stomp, credentials) else {
            throw .config("no Web-STOMP URL: set stomp in the config (/credentials gave none)")
        }
        let turn = turnServers(credentials)
        try checkRelay(turn)
        let trust = turn.servers.contains { $0.scheme == .turns } ? " (turns: verified against \(turn.caFile ?? "the system's CAs"))" : ""
        log.info("TURN from /credentials: \(turn.servers.isEmpty ? "none" : turn.servers.map(\.description).joined(separator: ", "))\(trust)")
        let stomp = StompClient(options: .init(url: url, host: "ecall"), logger: log) {
            let c = try await client.credentials()
            return .init(login: "device-\(me.deviceId)", passcode: c.rabbitmqToken, expires: c.rabbitmqTokenExpiresAt.map(Date.init(timeIntervalSince1970:)))
        }
        do { try await stomp.start() } catch { throw .stomp(error.description) }
        log.info("agent up: user \(me.userId), device \(me.deviceId) (\(identity.kind.rawValue) key \(identity.publicKey.hash.prefix(16))…)")
        return Connections(backend: client, stomp: stomp, identity: identity, me: me, issuedTURN: turn,
                           turnRefreshAfter: Self.turnRefreshDelay(username: credentials.turnUsername))
    }

    /// The Web-STOMP URL: the config's `stomp`, else the first `ws(s):` URL of `tlsUrl` and
    /// `noneTlsUrl`. ECALL-WIRE does not say what these address; ECall gives TURN URIs there,
    /// the stand-in backend its Web-STOMP endpoint when it has no TLS TURN to give.
    static func stompURL(config stomp: String?, _ c: Credentials) -> String? {
        if let stomp, !stomp.isEmpty { return stomp }
        return [c.tlsUrl, c.noneTlsUrl].compactMap { $0 }.first { $0.hasPrefix("ws:") || $0.hasPrefix("wss:") }
    }

    /// `/credentials`' TURN servers (`noneTlsUrl`, then `tlsUrl`) with its credentials; a
    /// `turns:` one goes through sfubot's TLS bridge, verified against `turn_ca_file` (else
    /// `--turn-ca-file`, else the system's CAs). Other URLs (ws:) are left out.
    func turnServers(_ c: Credentials) -> ICEServers {
        Self.turnServers(c, caFile: config.turnCAFile ?? config.ice.caFile)
    }

    static func turnServers(_ c: Credentials, caFile: String?) -> ICEServers {
        guard let user = c.turnUsername, let password = c.turnPassword, !user.isEmpty else { return ICEServers(caFile: caFile) }
        let servers = [c.noneTlsUrl, c.tlsUrl].compactMap { $0 }.filter { $0.hasPrefix("turn:") || $0.hasPrefix("turns:") }.compactMap { try? ICEServer(parsing: $0) }
        return ICEServers(servers: servers, credential: servers.isEmpty ? .none : .password(username: user, password: password), caFile: caFile)
    }

    /// Relay only needs a TURN server: `--ice-server`'s or `/credentials`'. Without either the
    /// agent would join calls it can never hear.
    func checkRelay(_ issued: ICEServers) throws(AgentError) {
        guard config.ice.policy == .relay, !issued.servers.contains(where: { $0.scheme != .stun }),
              !config.ice.servers.contains(where: { $0.scheme != .stun }) else { return }
        throw .config("--ice-transport-policy relay needs a TURN server: give --ice-server turn:… or turns:…, or a backend whose /credentials gives one (with credentials)")
    }
}
