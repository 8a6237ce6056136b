public import AsyncHTTPClient
public import Foundation
public import Logging
import NIOCore
import NIOFoundationCompat
import NIOHTTP1

/// The ECall backend's REST API (ECALL-WIRE §7): every request signed, bearer tokens refreshed
/// once on `ErrAccessTokenExpired`, the session kept in a 0600 file. Tokens never reach the log.
public actor ECallClient {
    public struct Configuration: Sendable {
        /// `<api>/app/api`, e.g. `https://ecall.example/app/api`.
        public var baseURL: String
        public var apiID: String
        public var apiSecret: String
        /// Where tokens and ids are kept between runs.
        public var sessionFile: String?
        public var timeout: Duration = .seconds(20)

        public init(baseURL: String, apiID: String, apiSecret: String, sessionFile: String? = nil) {
            self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
            self.apiID = apiID
            self.apiSecret = apiSecret
            self.sessionFile = sessionFile
        }
    }

    public let configuration: Configuration
    private let signer: RequestSigner
    private let http: HTTPClient
    private let log: Logger
    private let store: SessionStore?
    public private(set) var session: SessionState?
    /// Token refreshes done (after an expired access token or on request).
    public private(set) var refreshes = 0

    public init(configuration: Configuration, logger: Logger, http: HTTPClient = .shared) throws(ECallError) {
        self.configuration = configuration
        signer = RequestSigner(apiID: configuration.apiID, secret: configuration.apiSecret)
        self.http = http
        log = logger
        store = configuration.sessionFile.map(SessionStore.init(path:))
        session = try store?.load()
    }

    // MARK: - Login

    /// `POST /login`: the backend sends an OTP to the email or phone.
    public func login(_ identity: LoginIdentity) async throws(ECallError) -> LoginChallenge {
        try await send("POST", "/login", body: identity, authorized: false)
    }

    /// `POST /verify-login` with the OTP; keeps the tokens.
    public func verifyLogin(code: String, _ identity: LoginIdentity) async throws(ECallError) -> SessionState {
        struct Body: Encodable {
            let code: String
            let identity: LoginIdentity
            func encode(to encoder: any Encoder) throws {
                try identity.encode(to: encoder)
                var c = encoder.container(keyedBy: Key.self)
                try c.encode(code, forKey: .code)
            }
            enum Key: CodingKey { case code }
        }
        struct Answer: Decodable { let accessToken: String; let refreshToken: String; let deviceId: Int64; let userId: Int64? }
        let a: Answer = try await send("POST", "/verify-login", body: Body(code: code, identity: identity), authorized: false)
        guard let userId = a.userId ?? session?.userId else { throw .badResponse("verify-login gave no userId") }
        let state = SessionState(userId: userId, deviceId: a.deviceId, accessToken: a.accessToken, refreshToken: a.refreshToken)
        try keep(state)
        log.info("logged in to ECall as user \(userId), device \(a.deviceId)")
        return state
    }

    /// `POST /refresh-token`: a new access token (and refresh token) for the session.
    public func refresh() async throws(ECallError) {
        guard var state = session else { throw .notLoggedIn }
        struct Body: Encodable { let refreshToken: String }
        struct Answer: Decodable { let accessToken: String; let refreshToken: String? }
        let a: Answer = try await send("POST", "/refresh-token", body: Body(refreshToken: state.refreshToken), authorized: false)
        state.accessToken = a.accessToken
        if let r = a.refreshToken { state.refreshToken = r }
        try keep(state)
        refreshes += 1
        log.debug("ECall access token refreshed")
    }

    private func keep(_ state: SessionState) throws(ECallError) {
        session = state
        try store?.save(state)
    }

    // MARK: - Keys and credentials

    /// `POST /register_device` with this device's public key and its hash.
    public func registerDevice(publicKey: String, publicKeyHash: String) async throws(ECallError) {
        struct Body: Encodable { let publicKey: String; let publicKeyHash: String }
        let _: Empty = try await send("POST", "/register_device", body: Body(publicKey: publicKey, publicKeyHash: publicKeyHash))
    }

    /// `POST /user/publicKeys`: `"<userId>_<deviceId>"` → public key (wire form).
    public func publicKeys(userIDs: [Int64]) async throws(ECallError) -> [String: String] {
        struct Body: Encodable { let userIds: [Int64] }
        struct Answer: Decodable { let publicKeys: [String: String] }
        let a: Answer = try await send("POST", "/user/publicKeys", body: Body(userIds: userIDs))
        return a.publicKeys
    }

    /// `GET /credentials`: TURN and the RabbitMQ (STOMP) token.
    public func credentials() async throws(ECallError) -> Credentials { try await send("GET", "/credentials") }

    // MARK: - Calls

    public func startCall(_ body: CallInvitationBody) async throws(ECallError) -> CallRecord { try await send("POST", "/call/start", body: body) }
    public func invite(callID: Int64, _ body: CallInvitationBody) async throws(ECallError) -> CallRecord { try await send("POST", "/call/\(callID)/invite", body: body) }
    public func join(callID: Int64) async throws(ECallError) -> CallRecord { try await send("POST", "/call/\(callID)/join") }
    public func requestRejoin(callID: Int64) async throws(ECallError) -> CallRecord { try await send("POST", "/call/\(callID)/request-rejoin") }
    public func rejoin(callID: Int64) async throws(ECallError) -> CallRecord { try await send("POST", "/call/\(callID)/rejoin") }

    public func participants(callID: Int64) async throws(ECallError) -> [Participant] {
        struct Answer: Decodable { let participants: [Participant] }
        let a: Answer = try await send("GET", "/call/\(callID)/participants")
        return a.participants
    }

    public func endCall(callID: Int64) async throws(ECallError) {
        struct Body: Encodable { let callId: Int64 }
        let _: Empty = try await send("POST", "/call/end", body: Body(callId: callID))
    }

    /// `GET /call/active`: calls this user is in or invited to.
    public func activeCalls() async throws(ECallError) -> [CallRecord] { try await send("GET", "/call/active") }

    // MARK: - Transport

    struct Empty: Codable {}
    struct ErrorBody: Decodable {
        struct Inner: Decodable { let code: String?; let status: Int?; let title: String?; let detail: String? }
        let error: Inner
    }

    private func send<Response: Decodable>(_ method: String, _ path: String, body: (some Encodable)? = Empty?.none,
                                           authorized: Bool = true) async throws(ECallError) -> Response {
        let data: Data
        do { data = try body.map { try JSONEncoder().encode($0) } ?? Data() } catch { throw .badResponse("cannot encode the request: \(error)") }
        do {
            return try await exchange(method, path, data, authorized: authorized)
        } catch .rejected(401, "ErrAccessTokenExpired", _) where authorized {
            // Once: refresh, then the same request again.
            try await refresh()
            return try await exchange(method, path, data, authorized: authorized)
        }
    }

    private func exchange<Response: Decodable>(_ method: String, _ path: String, _ body: Data, authorized: Bool) async throws(ECallError) -> Response {
        guard let url = URL(string: configuration.baseURL + path) else { throw .badResponse("bad URL \(configuration.baseURL + path)") }
        var request = HTTPClientRequest(url: url.absoluteString)
        request.method = .init(rawValue: method)
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "Accept", value: "application/json")
        for (name, value) in signer.headers(method: method, path: url.path, body: body) { request.headers.add(name: name, value: value) }
        if authorized {
            guard let token = session?.accessToken else { throw .notLoggedIn }
            request.headers.add(name: "Authorization", value: "Bearer \(token)")
        }
        if !body.isEmpty { request.body = .bytes(ByteBuffer(data: body)) }
        let status: Int, bytes: ByteBuffer
        do {
            let response = try await http.execute(request, timeout: .seconds(configuration.timeout.components.seconds))
            status = Int(response.status.code)
            bytes = try await response.body.collect(upTo: 4 << 20)
        } catch {
            throw .unreachable("\(method) \(path): \(error)")
        }
        log.debug("ECall \(method) \(path) → \(status)")
        let data = Data(buffer: bytes)
        guard (200..<300).contains(status) else {
            let e = try? JSONDecoder().decode(ErrorBody.self, from: data)
            throw .rejected(status: status, code: e?.error.code ?? "HTTP\(status)", detail: e?.error.detail ?? e?.error.title ?? "no detail")
        }
        if Response.self == Empty.self, data.isEmpty { return Empty() as! Response }
        do { return try JSONDecoder().decode(Response.self, from: data) } catch {
            throw .badResponse("\(method) \(path): \(error)")
        }
    }
}
