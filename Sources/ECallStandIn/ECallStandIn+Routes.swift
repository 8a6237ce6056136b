import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NIOFoundationCompat
import Logging
import Synchronization
import Locking

/// The REST subset sfubot uses (ECALL-WIRE §7), and the HTTP entry point that also answers
/// RabbitMQ's auth backend.
extension ECallStandIn {

    func respond(_ request: Request) async throws -> Response {
        var request = request
        let body = Data(buffer: try await request.collectBody(upTo: 1 << 20))
        let path = request.uri.path, method = request.method.rawValue
        if path.hasPrefix("/rabbitmq/") {
            let verdict = brokerAuth(path: path, form: Self.form(body))
            return Response(status: .ok, headers: [.contentType: "text/plain"], body: .init(byteBuffer: ByteBuffer(string: verdict)))
        }
        let who = owner(request.headers[.authorization])
        do {
            try checkSignature(request, method: method, path: path, body: body)
            let json = body.isEmpty ? [:] : (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:]
            let result = try await route(method: method, path: path, json: json, auth: request.headers[.authorization])
            remember(method, path, who, status: 200)
            return Self.json(.ok, result)
        } catch let f as Failure {
            log.info("\(method) \(path) → \(f.status.code) \(f.code)")
            remember(method, path, who, status: Int(f.status.code))
            return Self.json(f.status, ["error": ["code": f.code, "status": Int(f.status.code), "title": f.code, "detail": f.detail]])
        }
    }

    /// Whose bearer token this is, expired or not (for the record of REST calls only).
    func owner(_ auth: String?) -> Token? {
        guard let auth, auth.hasPrefix("Bearer ") else { return nil }
        return state.withLock { $0.tokens[String(auth.dropFirst(7))] }
    }

    private func remember(_ method: String, _ path: String, _ who: Token?, status: Int) {
        state.withLock { s in
            s.restCalls.append(RESTCall(method: method, path: path, userId: who?.userId, deviceId: who?.deviceId, status: status))
            if s.restCalls.count > Self.restCallLimit { s.restCalls.removeFirst(s.restCalls.count - Self.restCallLimit) }
        }
    }

    static func json(_ status: HTTPResponse.Status, _ object: Any) -> Response {
        let data = (try? JSONSerialization.data(withJSONObject: object)) ?? Data("{}".utf8)
        return Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(data: data)))
    }

    func route(method: String, path: String, json: [String: Any], auth: String?) async throws -> Any {
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
            let turn = turnCredentials(user: "\(me.userId)")
            var answer: [String: Any] = ["turnUsername": turn?.username ?? "", "turnPassword": turn?.password ?? "",
                                         "rabbitmqToken": token, "rabbitmqTokenExpiresAt": expires.timeIntervalSince1970]
            for (key, url) in turnURLs() { answer[key] = url }
            return answer
        case ("POST", "call", 2) where route[1] == "start":
            guard let room = (json["roomId"] as? NSNumber)?.int64Value else { throw Failure(status: .badRequest, code: "ErrBadRequest", detail: "roomId is required") }
            let callees = (json["calleeIds"] as? [Any])?.compactMap { ($0 as? NSNumber)?.int64Value } ?? []
            return state.withLock { s in
                let call = Call(id: s.id(), roomId: room, callerId: me.userId, callerDeviceId: me.deviceId, isVideo: json["isVideo"] as? Bool ?? false,
                                keys: json["encryptedAESKeys"] as? [String: String] ?? [:],
                                participants: Dictionary(uniqueKeysWithValues: [(me.userId, "joined")] + callees.map { ($0, "invited") }),
                                devices: [me.userId: me.deviceId], janusRoomId: room)
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
            return try await callAction(method, route[2], callID: id, json: json, me: me)
        default:
            throw Failure(status: .notFound, code: "ErrNotFound", detail: "\(method) \(path)")
        }
    }

    func record(_ call: Call, for me: Token) -> [String: Any] {
        var r: [String: Any] = ["id": call.id, "roomId": call.roomId, "janusRoomId": call.janusRoomId, "callerId": call.callerId,
                                "callerDeviceId": call.callerDeviceId, "isVideo": call.isVideo, "status": call.ended ? "ended" : "ongoing"]
        if let key = call.keys["\(me.userId)_\(me.deviceId)"] { r["encryptedAESKey"] = key }
        return r
    }
}
