public import AsyncHTTPClient
import Foundation
public import Logging

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
    private let transport: any ECallTransport
    private let log: Logger
    private let store: SessionStore?
    public private(set) var session: SessionState?
    /// Token refreshes done (after an expired access token or on request).
    public private(set) var refreshes = 0
    private var refreshing = Refresh.idle

    /// Talks to the backend over `http` (AsyncHTTPClient).
    public init(configuration: Configuration, logger: Logger, http: HTTPClient = .shared) throws(ECallError) {
        try self.init(configuration: configuration, logger: logger, transport: AsyncHTTPClientTransport(http: http))
    }

    /// Talks to the backend through `transport` (tests script it).
    public init(configuration: Configuration, logger: Logger, transport: any ECallTransport) throws(ECallError) {
        self.configuration = configuration
        signer = RequestSigner(apiID: configuration.apiID, secret: configuration.apiSecret)
        self.transport = transport
        var log = logger
        log[metadataKey: "component"] = "ecall"
        self.log = log
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

    /// `POST /refresh-token`: a new access token (and refresh token) for the session. The refresh
    /// token is single-use: while one refresh is in flight, every other caller awaits it.
    public func refresh() async throws(ECallError) {
        _ = try await refreshOnce()
    }

    /// Token refreshing: at most one `/refresh-token` in flight.
    private enum Refresh {
        case idle
        case running(Task<Result<SessionState, ECallError>, Never>)
    }

    private func refreshOnce() async throws(ECallError) -> SessionState {
        if case .running(let inFlight) = refreshing { return try await inFlight.value.get() }
        guard let state = session else { throw .notLoggedIn }
        let task = Task { await self.exchangeRefreshToken(state) }
        refreshing = .running(task)
        let result = await task.value
        // Only the caller that started it ends it (a later refresh may have begun meanwhile).
        if case .running(let t) = refreshing, t == task { refreshing = .idle }
        return try result.get()
    }

    private func exchangeRefreshToken(_ old: SessionState) async -> Result<SessionState, ECallError> {
        struct Body: Encodable { let refreshToken: String }
        struct Answer: Decodable { let accessToken: String; let refreshToken: String? }
        do throws(ECallError) {
            let a: Answer = try await send("POST", "/refresh-token", body: Body(refreshToken: old.refreshToken), authorized: false)
            // Re-checked after the await: a logout or a new login meanwhile is not overwritten.
            guard var state = session, state.userId == old.userId, state.deviceId == old.deviceId else { throw .notLoggedIn }
            state.accessToken = a.accessToken
            if let r = a.refreshToken { state.refreshToken = r }
            try keep(state)
            refreshes += 1
            log.debug("ECall access token refreshed")
            return .success(state)
        } catch {
            return .failure(error)
        }
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
        let token = session?.accessToken
        do {
            return try await exchange(method, path, data, authorized: authorized)
        } catch where authorized && error.isAccessTokenExpired {
            // Once: refresh (unless another request already did since this one was sent), then
            // the same request again.
            if session?.accessToken == token { _ = try await refreshOnce() }
            return try await exchange(method, path, data, authorized: authorized)
        }
    }

    private func exchange<Response: Decodable>(_ method: String, _ path: String, _ body: Data, authorized: Bool) async throws(ECallError) -> Response {
        guard let url = URL(string: configuration.baseURL + path) else { throw .badResponse("bad URL \(configuration.baseURL + path)") }
        var headers = ["Content-Type": "application/json", "Accept": "application/json"]
        for (name, value) in signer.headers(method: method, path: url.path, body: body) { headers[name] = value }
        if authorized {
            guard let token = session?.accessToken else { throw .notLoggedIn }
            headers["Authorization"] = "Bearer \(token)"
        }
        let request = ECallHTTPRequest(method: method, url: url.absoluteString, path: url.path, headers: headers, body: body)
        let response: ECallHTTPResponse
        do { response = try await transport.send(request, timeout: configuration.timeout) } catch {
            throw .unreachable("\(method) \(path): \(error)")
        }
        let status = response.status, data = response.body
        log.debug("ECall \(method) \(path) → \(status)")
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
