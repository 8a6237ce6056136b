import Crypto
public import Foundation
import Hummingbird
public import Logging
import NIOCore
import NIOFoundationCompat
import HTTPTypes
import Synchronization
import ECall

/// A STAND-IN for the ECall backend, for tests and local runs: nobody can run the real one here.
/// It serves the REST subset sfubot uses (ECALL-WIRE §7) and checks what the real one checks:
/// the request signature (`X-Api-Id`, `X-Nonce` within 5 minutes, `X-Signature`), bearer tokens
/// and their expiry (`ErrAccessTokenExpired`), the OTP, and that a registered key's hash matches.
/// State lives in memory.
public final class ECallStandIn: Sendable {
    public struct Configuration: Sendable {
        public var apiID = "sfubot-dev"
        public var apiSecret = "sfubot-dev-secret"
        /// The one-time code every login accepts.
        public var otp = "123456"
        public var accessTokenLifetime: TimeInterval = 900
        /// Where `/credentials` points STOMP clients.
        public var stompURL = "ws://127.0.0.1:15674/ws/"
        /// How long a RabbitMQ token from `/credentials` is good for.
        public var rabbitTokenLifetime: TimeInterval = 3600
        public init() {}
    }

    public let configuration: Configuration
    private let state = Mutex(State())
    private let log: Logger
    private let server = Mutex<Task<Void, any Error>?>(nil)

    /// What a test can look at afterwards.
    public struct Counters: Sendable, Equatable {
        public var badSignatures = 0
        public var expiredTokens = 0
        public var refreshes = 0
        /// RabbitMQ logins the backend refused (unknown or expired token).
        public var refusedBrokerLogins = 0
        /// Signal messages passed from ecall.signal.in to a device, and refused (no valid bearer
        /// token, not JSON, no recipient).
        public var signalsRouted = 0
        public var signalsRefused = 0
    }

    public var counters: Counters { state.withLock { $0.counters } }

    public init(configuration: Configuration = .init(), logger: Logger = Logger(label: "ecall-standin")) {
        self.configuration = configuration
        log = logger
    }

    /// Serves on 127.0.0.1 (port 0: any free one) and returns the API base URL, `…/app/api`.
    public func start(port: Int = 0) async throws -> String {
        let (ports, bound) = AsyncStream.makeStream(of: Int.self)
        let app = Application(
            responder: CallbackResponder { [self] (request: Request, _: BasicRequestContext) in try await self.respond(request) },
            configuration: .init(address: .hostname("127.0.0.1", port: port), serverName: "ecall-standin"),
            onServerRunning: { channel in bound.yield(channel.localAddress?.port ?? port); bound.finish() },
            logger: Self.quiet(log))
        let task = Task {
            // If the server ends before it runs (port taken), `start` must not wait forever.
            defer { bound.finish() }
            try await app.run()
        }
        server.withLock { $0 = task }
        for await p in ports { return "http://127.0.0.1:\(p)/app/api" }
        if case .failure(let error) = await task.result { throw error }
        throw CancellationError()
    }

    /// Hummingbird logs a cancelled server at error level; stopping the stand-in is not an error.
    static func quiet(_ log: Logger) -> Logger {
        var l = log
        l.logLevel = .critical
        return l
    }

    public func stop() async {
        let task = server.withLock { t in defer { t = nil }; return t }
        task?.cancel()
        _ = await task?.result
    }

    /// Makes every access token issued so far expire now (to test refreshing).
    public func expireAccessTokens() {
        state.withLock { s in for k in s.tokens.keys { s.tokens[k]?.expires = .distantPast } }
    }

    // MARK: - State

    struct Device { var userId: Int64; var deviceId: Int64; var publicKey: String }
    struct Token { var userId: Int64; var deviceId: Int64; var expires: Date }
    struct Call {
        var id: Int64, roomId: Int64, callerId: Int64, callerDeviceId: Int64, isVideo: Bool
        var keys: [String: String]
        var participants: [Int64: String]  // userId → status
        var ended = false
    }

    struct State {
        var users: [String: Int64] = [:]
        var devices: [String: Device] = [:]  // identifier → device
        var tokens: [String: Token] = [:]
        var refreshTokens: [String: (Int64, Int64)] = [:]
        var brokerTokens: [String: (deviceId: Int64, expires: Date)] = [:]
        var calls: [Int64: Call] = [:]
        var next: Int64 = 1000
        var counters = Counters()
        mutating func id() -> Int64 { next += 1; return next }
    }

    // MARK: - Requests

    struct Failure: Error { let status: HTTPResponse.Status; let code: String; let detail: String }

    func respond(_ request: Request) async throws -> Response {
        var request = request
        let body = Data(buffer: try await request.collectBody(upTo: 1 << 20))
        let path = request.uri.path, method = request.method.rawValue
        if path.hasPrefix("/rabbitmq/") {
            let verdict = brokerAuth(path: path, form: Self.form(body))
            return Response(status: .ok, headers: [.contentType: "text/plain"], body: .init(byteBuffer: ByteBuffer(string: verdict)))
        }
        do {
            try checkSignature(request, method: method, path: path, body: body)
            let json = body.isEmpty ? [:] : (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:]
            let result = try route(method: method, path: path, json: json, auth: request.headers[.authorization])
            return Self.json(.ok, result)
        } catch let f as Failure {
            log.info("\(method) \(path) → \(f.status.code) \(f.code)")
            return Self.json(f.status, ["error": ["code": f.code, "status": Int(f.status.code), "title": f.code, "detail": f.detail]])
        }
    }

    static func json(_ status: HTTPResponse.Status, _ object: Any) -> Response {
        let data = (try? JSONSerialization.data(withJSONObject: object)) ?? Data("{}".utf8)
        return Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(data: data)))
    }

    private func checkSignature(_ request: Request, method: String, path: String, body: Data) throws {
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

    private func caller(_ auth: String?) throws -> Token {
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

    private func issue(_ s: inout State, userId: Int64, deviceId: Int64) -> [String: Any] {
        let access = UUID().uuidString, refresh = UUID().uuidString
        s.tokens[access] = Token(userId: userId, deviceId: deviceId, expires: Date().addingTimeInterval(configuration.accessTokenLifetime))
        s.refreshTokens[refresh] = (userId, deviceId)
        return ["accessToken": access, "refreshToken": refresh, "deviceId": deviceId, "userId": userId]
    }

    private func route(method: String, path: String, json: [String: Any], auth: String?) throws -> Any {
        let parts = path.split(separator: "/").map(String.init)
        guard parts.count >= 3, parts[0] == "app", parts[1] == "api" else { throw Failure(status: .notFound, code: "ErrNotFound", detail: path) }
        let route = Array(parts.dropFirst(2))
        switch (method, route.first, route.count) {
        case ("POST", "login", 1):
            guard let account = (json["email"] ?? json["phoneNumber"]) as? String, let identifier = json["identifier"] as? String,
                  let key = json["publicKey"] as? String else { throw Failure(status: .badRequest, code: "ErrBadRequest", detail: "email or phoneNumber, identifier and publicKey are required") }
            return state.withLock { s -> [String: Any] in
                let user = s.users[account] ?? s.id()
                s.users[account] = user
                let device = s.devices[identifier]?.deviceId ?? s.id()
                s.devices[identifier] = Device(userId: user, deviceId: device, publicKey: key)
                return ["userId": user, "deviceId": device]
            }
        case ("POST", "verify-login", 1):
            guard json["code"] as? String == configuration.otp else { throw Failure(status: .unauthorized, code: "ErrInvalidOTP", detail: "wrong code") }
            guard let identifier = json["identifier"] as? String else { throw Failure(status: .badRequest, code: "ErrBadRequest", detail: "identifier is required") }
            return try state.withLock { s in
                guard let d = s.devices[identifier] else { throw Failure(status: .badRequest, code: "ErrNoLogin", detail: "log in first") }
                return issue(&s, userId: d.userId, deviceId: d.deviceId)
            }
        case ("POST", "refresh-token", 1):
            guard let refresh = json["refreshToken"] as? String else { throw Failure(status: .badRequest, code: "ErrBadRequest", detail: "refreshToken is required") }
            return try state.withLock { s in
                guard let (u, d) = s.refreshTokens.removeValue(forKey: refresh) else { throw Failure(status: .unauthorized, code: "ErrInvalidRefreshToken", detail: "unknown refresh token") }
                s.counters.refreshes += 1
                return issue(&s, userId: u, deviceId: d)
            }
        default: break
        }
        let me = try caller(auth)
        switch (method, route.first, route.count) {
        case ("POST", "register_device", 1):
            guard let key = json["publicKey"] as? String, let hash = json["publicKeyHash"] as? String else { throw Failure(status: .badRequest, code: "ErrBadRequest", detail: "publicKey and publicKeyHash are required") }
            guard SHA256.hash(data: Data(key.utf8)).map({ String(format: "%02x", $0) }).joined() == hash else {
                throw Failure(status: .badRequest, code: "ErrBadPublicKeyHash", detail: "publicKeyHash is not SHA-256 of publicKey")
            }
            state.withLock { s in
                if let k = s.devices.first(where: { $0.value.deviceId == me.deviceId })?.key { s.devices[k]?.publicKey = key }
            }
            return [String: Any]()
        case ("POST", "user", 2) where route[1] == "publicKeys":
            let users = (json["userIds"] as? [Any])?.compactMap { ($0 as? NSNumber)?.int64Value } ?? []
            let keys = state.withLock { s in
                Dictionary(uniqueKeysWithValues: s.devices.values.filter { users.contains($0.userId) }.map { ("\($0.userId)_\($0.deviceId)", $0.publicKey) })
            }
            return ["publicKeys": keys]
        case ("GET", "credentials", 1):
            let token = UUID().uuidString, expires = Date().addingTimeInterval(configuration.rabbitTokenLifetime)
            state.withLock { $0.brokerTokens[token] = (me.deviceId, expires) }
            return ["tlsUrl": configuration.stompURL, "noneTlsUrl": configuration.stompURL, "turnUsername": "", "turnPassword": "",
                    "rabbitmqToken": token, "rabbitmqTokenExpiresAt": expires.timeIntervalSince1970]
        case ("POST", "call", 2) where route[1] == "start":
            guard let room = (json["roomId"] as? NSNumber)?.int64Value else { throw Failure(status: .badRequest, code: "ErrBadRequest", detail: "roomId is required") }
            let callees = (json["calleeIds"] as? [Any])?.compactMap { ($0 as? NSNumber)?.int64Value } ?? []
            return state.withLock { s in
                let call = Call(id: s.id(), roomId: room, callerId: me.userId, callerDeviceId: me.deviceId, isVideo: json["isVideo"] as? Bool ?? false,
                                keys: json["encryptedAESKeys"] as? [String: String] ?? [:],
                                participants: Dictionary(uniqueKeysWithValues: [(me.userId, "joined")] + callees.map { ($0, "invited") }))
                s.calls[call.id] = call
                return record(call, for: me)
            }
        case ("POST", "call", 2) where route[1] == "end":
            guard let id = (json["callId"] as? NSNumber)?.int64Value else { throw Failure(status: .badRequest, code: "ErrBadRequest", detail: "callId is required") }
            try state.withLock { s in
                guard s.calls[id] != nil else { throw Failure(status: .notFound, code: "ErrCallNotFound", detail: "no call \(id)") }
                s.calls[id]?.ended = true
            }
            return [String: Any]()
        case ("GET", "call", 2) where route[1] == "active":
            return state.withLock { s in
                s.calls.values.filter { !$0.ended && $0.participants[me.userId] != nil }.sorted { $0.id < $1.id }.map { record($0, for: me) }
            }
        case (_, "call", 3):
            guard let id = Int64(route[1]) else { throw Failure(status: .notFound, code: "ErrNotFound", detail: path) }
            return try state.withLock { s in
                guard var call = s.calls[id], !call.ended else { throw Failure(status: .notFound, code: "ErrCallNotFound", detail: "no active call \(id)") }
                switch (method, route[2]) {
                case ("POST", "invite"):
                    for u in (json["calleeIds"] as? [Any])?.compactMap({ ($0 as? NSNumber)?.int64Value }) ?? [] where call.participants[u] == nil { call.participants[u] = "invited" }
                    for (k, v) in json["encryptedAESKeys"] as? [String: String] ?? [:] { call.keys[k] = v }
                case ("POST", "join"), ("POST", "rejoin"): call.participants[me.userId] = "joined"
                case ("POST", "request-rejoin"): call.participants[me.userId] = "rejoining"
                case ("GET", "participants"):
                    let list = call.participants.sorted { $0.key < $1.key }.map { user, status -> [String: Any] in
                        let device = s.devices.values.first { $0.userId == user }?.deviceId ?? 0
                        return ["userId": user, "deviceId": device, "isHostKey": user == call.callerId, "status": status]
                    }
                    return ["participants": list]
                default: throw Failure(status: .notFound, code: "ErrNotFound", detail: "\(method) \(path)")
                }
                s.calls[id] = call
                return record(call, for: me)
            }
        default:
            throw Failure(status: .notFound, code: "ErrNotFound", detail: "\(method) \(path)")
        }
    }

    private func record(_ call: Call, for me: Token) -> [String: Any] {
        var r: [String: Any] = ["id": call.id, "roomId": call.roomId, "janusRoomId": call.roomId, "callerId": call.callerId,
                                "callerDeviceId": call.callerDeviceId, "isVideo": call.isVideo, "status": call.ended ? "ended" : "ongoing"]
        if let key = call.keys["\(me.userId)_\(me.deviceId)"] { r["encryptedAESKey"] = key }
        return r
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

    // MARK: - Signal routing

    private let router = Mutex<StompClient?>(nil)

    /// Connects to RabbitMQ as the backend's service user and passes every signal message sent
    /// to ecall.signal.in with a valid bearer token to its recipient's
    /// ecall.signal.out/<deviceId> (`participantDeviceId`, else `calleeDeviceId`).
    public func startRouting(stompURL: String, password: String = "ecall-backend-dev") async throws {
        var options = StompClient.Options(url: stompURL, host: "ecall")
        options.heartBeat = .seconds(10)
        let client = StompClient(options: options, logger: log) { .init(login: "ecall-backend", passcode: password) }
        try await client.start()
        let inbound = await client.subscribe("/exchange/ecall.signal.in/#")
        router.withLock { $0 = client }
        Task { [self] in
            for await frame in inbound { await route(frame, via: client) }
        }
    }

    public func stopRouting() async {
        let client = router.withLock { c in defer { c = nil }; return c }
        await client?.close()
    }

    private func route(_ frame: StompFrame, via client: StompClient) async {
        let authorized = frame["authorization"].map { auth -> Bool in
            (try? caller(auth)) != nil
        } ?? false
        guard authorized,
              let json = (try? JSONSerialization.jsonObject(with: frame.body)) as? [String: Any], json["type"] is String,
              let device = ((json["participantDeviceId"] ?? json["calleeDeviceId"]) as? NSNumber)?.int64Value else {
            state.withLock { $0.counters.signalsRefused += 1 }
            log.info("signal refused: \(authorized ? "no JSON type or recipient" : "no valid bearer token")")
            return
        }
        do {
            try await client.send("/exchange/ecall.signal.out/\(device)", body: frame.body, headers: [("content-type", "application/json")])
            state.withLock { $0.counters.signalsRouted += 1 }
        } catch {
            state.withLock { $0.counters.signalsRefused += 1 }
        }
    }
}
