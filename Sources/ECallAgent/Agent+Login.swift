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
        // ECALL-WIRE does not say what tlsUrl/noneTlsUrl address: TURN when they are turn(s): URIs,
        // the Web-STOMP endpoint when they are ws(s): URLs (the stand-in's). `stomp` in the config wins.
        let url = config.stomp ?? [credentials.tlsUrl, credentials.noneTlsUrl].compactMap { $0 }.first { $0.hasPrefix("ws") } ?? ""
        guard !url.isEmpty else { throw .config("no Web-STOMP URL: set stomp in the config") }
        let stomp = StompClient(options: .init(url: url, host: "ecall"), logger: log) {
            let c = try await client.credentials()
            return .init(login: "device-\(me.deviceId)", passcode: c.rabbitmqToken, expires: c.rabbitmqTokenExpiresAt.map(Date.init(timeIntervalSince1970:)))
        }
        do { try await stomp.start() } catch { throw .stomp(error.description) }
        log.info("agent up: user \(me.userId), device \(me.deviceId) (\(identity.kind.rawValue) key \(identity.publicKey.hash.prefix(16))…)")
        return Connections(backend: client, stomp: stomp, identity: identity, me: me, turnServers: Self.turnServers(credentials),
                           turnRefreshAfter: Self.turnRefreshDelay(username: credentials.turnUsername))
    }

    /// `/credentials`' TURN fields as webrtcbin TURN URIs: `turn:host:port` → `turn://user:password@host:port`.
    static func turnServers(_ c: Credentials) -> [String] {
        guard let user = c.turnUsername, let password = c.turnPassword, !user.isEmpty else { return [] }
        let escape = { (s: String) in s.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? s }
        return [c.noneTlsUrl, c.tlsUrl].compactMap { $0 }.compactMap { url -> String? in
            // turns: (tlsUrl) is left out: these URIs go to libnice as they are, and libnice
            // would speak plain TCP to it (only --ice-server turns: goes through sfubot's TLS).
            guard url.hasPrefix("turn:") else { return nil }
            let rest = url.dropFirst("turn:".count).drop { $0 == "/" }.split(separator: "?").first.map(String.init) ?? ""
            return rest.isEmpty ? nil : "turn://\(escape(user)):\(escape(password))@\(rest)"
        }
    }
}
