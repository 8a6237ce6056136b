import Crypto
import Foundation

extension ECallStandIn {
    /// coturn's REST API credentials, as a backend with coturn's `static-auth-secret` makes
    /// them: username `<expiry unix time>:<user>`, password base64(HMAC-SHA1(secret, username)).
    func turnCredentials(user: String, now: Date = Date()) -> (username: String, password: String)? {
        guard let turn = configuration.turn else { return nil }
        let username = "\(Int(now.timeIntervalSince1970 + configuration.turnLifetime)):\(user)"
        let mac = HMAC<Insecure.SHA1>.authenticationCode(for: Data(username.utf8), using: SymmetricKey(data: Data(turn.secret.utf8)))
        return (username, Data(mac).base64EncodedString())
    }

    /// `/credentials`' `tlsUrl` and `noneTlsUrl`. With coturn's TLS port: `turns:` and `turn:`,
    /// as ECall gives (the agent then needs `stomp` in its config). Without: the Web-STOMP URL
    /// where no TURN URL goes, which sfubot reads as a fallback for `stomp`.
    func turnURLs() -> [String: String] {
        let turn = configuration.turn
        guard let port = turn?.tlsPort else {
            return ["tlsUrl": configuration.stompURL, "noneTlsUrl": turn?.url ?? configuration.stompURL]
        }
        var urls = ["tlsUrl": "turns:127.0.0.1:\(port)?transport=tcp"]
        urls["noneTlsUrl"] = turn?.url
        return urls
    }
}
