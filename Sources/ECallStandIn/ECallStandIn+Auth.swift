import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Synchronization
import Locking

/// What the real backend checks: request signatures, bearer tokens and their expiry, and (as
/// RabbitMQ's HTTP auth backend) which device may log in to the broker and read or write what.
extension ECallStandIn {
    /// A refusal, answered as ECall's `{"error":{code,status,title,detail}}`.
    struct Failure: Error { let status: HTTPResponse.Status; let code: String; let detail: String }

    func checkSignature(_ request: Request, method: String, path: String, body: Data) throws {
        let h = request.headers
        let apiID = h[HTTPField.Name("X-Api-Id")!], nonce = h[HTTPField.Name("X-Nonce")!], signature = h[HTTPField.Name("X-Signature")!]
        guard apiID == configuration.apiID, let nonce, let signature, let seconds = Double(nonce),
              abs(seconds - Date().timeIntervalSince1970) <= 300 else {
            state.withLock { $0.counters.badSignatures += 1 }
            throw Failure(status: .unauthorized, code: "ErrInvalidSignature", detail: "missing or stale X-Api-Id/X-Nonce/X-Signature")
        }
        var message = Data((configuration.apiID + method + (path.isEmpty ? "/" : path)).utf8)
        message.append(body)
        message.append(Data(nonce.utf8))
        let expected = HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: Data(configuration.apiSecret.utf8)))
            .map { String(format: "%02x", $0) }.joined()
        guard expected == signature else {
            state.withLock { $0.counters.badSignatures += 1 }
            throw Failure(status: .unauthorized, code: "ErrInvalidSignature", detail: "X-Signature does not match the request")
        }
    }

    func caller(_ auth: String?) throws -> Token {
        guard let auth, auth.hasPrefix("Bearer ") else { throw Failure(status: .unauthorized, code: "ErrUnauthorized", detail: "no bearer token") }
        let token = String(auth.dropFirst(7))
        return try state.withLock { s in
            guard let t = s.tokens[token] else { throw Failure(status: .unauthorized, code: "ErrUnauthorized", detail: "unknown token") }
            guard t.expires > Date() else {
                s.counters.expiredTokens += 1
                throw Failure(status: .unauthorized, code: "ErrAccessTokenExpired", detail: "access token expired")
            }
            return t
        }
    }

    func issue(_ s: inout State, userId: Int64, deviceId: Int64) -> [String: Any] {
        let access = UUID().uuidString, refresh = UUID().uuidString
        s.tokens[access] = Token(userId: userId, deviceId: deviceId, expires: Date().addingTimeInterval(configuration.accessTokenLifetime))
        s.refreshTokens[refresh] = (userId, deviceId)
        return ["accessToken": access, "refreshToken": refresh, "deviceId": deviceId, "userId": userId]
    }

    // MARK: - RabbitMQ's HTTP auth backend

    static func form(_ body: Data) -> [String: String] {
        var out: [String: String] = [:]
        for pair in String(decoding: body, as: UTF8.self).split(separator: "&") {
            let kv = pair.split(separator: "=", maxSplits: 1).map { String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String($0) }
            if kv.count == 2 { out[kv[0]] = kv[1] }
        }
        return out
    }

    /// RabbitMQ asks whether a device may log in (`device-<id>` with a live token from
    /// `/credentials`), use the `ecall` vhost, write to ecall.signal.in, and read its own routing
    /// key of ecall.signal.out (and its subscription queues).
    func brokerAuth(path: String, form: [String: String]) -> String {
        let user = form["username"] ?? ""
        guard user.hasPrefix("device-"), let device = Int64(user.dropFirst(7)) else { return "deny" }
        switch path {
        case "/rabbitmq/user":
            let ok = state.withLock { s -> Bool in
                guard let t = s.brokerTokens[form["password"] ?? ""], t.deviceId == device, t.expires > Date() else {
                    s.counters.refusedBrokerLogins += 1
                    return false
                }
                return true
            }
            return ok ? "allow" : "deny"
        case "/rabbitmq/vhost":
            return form["vhost"] == "ecall" ? "allow" : "deny"
        case "/rabbitmq/resource":
            guard form["vhost"] == "ecall" else { return "deny" }
            switch (form["resource"], form["name"], form["permission"]) {
            case ("queue", _, _): return "allow"
            case ("exchange", "ecall.signal.in", "write"), ("exchange", "ecall.signal.out", "read"): return "allow"
            default: return "deny"
            }
        case "/rabbitmq/topic":
            switch (form["name"], form["permission"]) {
            case ("ecall.signal.in", "write"): return "allow"
            case ("ecall.signal.out", "read"): return form["routing_key"] == String(device) ? "allow" : "deny"
            default: return "deny"
            }
        default:
            return "deny"
        }
    }
}
