import ECall
import Foundation
import Logging
import Synchronization
import Testing
import Locking

/// The single-use refresh token is spent once, however many requests find the access token
/// expired at the same time. No network: the backend is a script behind `ECallTransport`.
@Suite(.timeLimit(.minutes(1))) struct TokenRefreshRaceTests {
    let sessionFile: String

    init() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sfubot-refresh-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        sessionFile = dir.appendingPathComponent("session.json").path
        // Logged in, with an access token the backend will call expired.
        let session = #"{"userId":1,"deviceId":2,"accessToken":"access-1","refreshToken":"refresh-1"}"#
        try Data(session.utf8).write(to: URL(fileURLWithPath: sessionFile))
    }

    func client(_ backend: ExpiringBackend) throws -> ECallClient {
        try ECallClient(configuration: .init(baseURL: "http://ecall.invalid/app/api", apiID: "id", apiSecret: "secret", sessionFile: sessionFile),
                        logger: Logger(label: "test"), transport: backend)
    }

    /// Both requests get 401 ErrAccessTokenExpired (each held until both were sent with the old
    /// token), and the refresh answer is held until both 401s are out: the interleaving in which
    /// each request would refresh with the same refresh token.
    @Test func twoRequestsThatFindTheTokenExpiredRefreshOnce() async throws {
        let backend = ExpiringBackend()
        let c = try client(backend)
        async let a = c.credentials()
        async let b = c.credentials()
        let (first, second) = try await (a, b)
        #expect(first.rabbitmqToken == "rabbit" && second.rabbitmqToken == "rabbit", "both retried with the new token")
        #expect(backend.counts.refreshCalls == 1, "one /refresh-token: the refresh token is single-use")
        #expect(backend.counts.expiredAnswers == 2)
        #expect(await c.refreshes == 1)
        #expect(await c.session?.accessToken == "access-2")
        #expect(try SessionStore(path: sessionFile).load()?.refreshToken == "refresh-2", "the new tokens are kept")
    }

    /// A refusal reaches every request waiting for that refresh, and a later refresh tries again.
    @Test func aFailedRefreshFailsEveryWaiterAndTheNextOneTriesAgain() async throws {
        let backend = ExpiringBackend(refuseRefresh: true)
        let c = try client(backend)
        let requests = [Task { try await c.credentials() }, Task { try await c.credentials() }]
        for request in requests {
            await #expect(throws: ECallError.rejected(status: 401, code: "ErrInvalidRefreshToken", detail: "unknown refresh token")) {
                _ = try await request.value
            }
        }
        #expect(backend.counts.refreshCalls == 1)
        await #expect(throws: ECallError.self) { try await c.refresh() }
        #expect(backend.counts.refreshCalls == 2, "a refresh after the failed one is a new attempt")
    }

    @Test func errorsAreClassifiedByPropertiesAndSayWhatToDo() {
        let expired = ECallError.rejected(status: 401, code: "ErrAccessTokenExpired", detail: "access token expired")
        #expect(expired.isAccessTokenExpired && expired.status == 401 && expired.code == "ErrAccessTokenExpired")
        #expect(!ECallError.rejected(status: 401, code: "ErrInvalidOTP", detail: "").isAccessTokenExpired)
        #expect(ECallError.unreachable("x").isUnreachable && ECallError.unreachable("x").status == nil)
        #expect(ECallError.rejected(status: 401, code: "ErrInvalidSignature", detail: "").description.contains("api_secret"))
    }
}

/// A backend whose access token `access-1` has expired. `/refresh-token` takes `refresh-1` once
/// (single-use, as ECall's) and issues `access-2`/`refresh-2`.
final class ExpiringBackend: ECallTransport {
    struct Counts {
        var oldTokenRequests = 0
        var expiredAnswers = 0
        var refreshCalls = 0
        var refreshTokens: Set<String> = ["refresh-1"]
        var accessToken = "access-1"
    }
    private let state = Locked(Counts())
    private let refuseRefresh: Bool
    var counts: Counts { state.withLock { $0 } }

    init(refuseRefresh: Bool = false) { self.refuseRefresh = refuseRefresh }

    func send(_ request: ECallHTTPRequest, timeout: Duration) async throws -> ECallHTTPResponse {
        if request.path.hasSuffix("/refresh-token") {
            state.withLock { $0.refreshCalls += 1 }
            await until { $0.expiredAnswers >= 2 }
            let token = (try? JSONDecoder().decode([String: String].self, from: request.body))?["refreshToken"] ?? ""
            let fresh = state.withLock { s -> Bool in
                guard !refuseRefresh, s.refreshTokens.remove(token) != nil else { return false }
                s.refreshTokens.insert("refresh-2")
                s.accessToken = "access-2"
                return true
            }
            guard fresh else { return Self.error(401, "ErrInvalidRefreshToken", "unknown refresh token") }
            return Self.json(#"{"accessToken":"access-2","refreshToken":"refresh-2"}"#)
        }
        let bearer = request.headers["Authorization"] ?? ""
        if bearer == "Bearer access-1" {
            state.withLock { $0.oldTokenRequests += 1 }
            await until { $0.oldTokenRequests >= 2 }
            state.withLock { $0.expiredAnswers += 1 }
            return Self.error(401, "ErrAccessTokenExpired", "access token expired")
        }
        guard bearer == "Bearer \(counts.accessToken)" else { return Self.error(401, "ErrUnauthorized", "unknown token") }
        return Self.json(#"{"rabbitmqToken":"rabbit"}"#)
    }

    /// Holds the answer until the condition holds (or 5 s passed: the test then fails on its counts).
    private func until(_ condition: (Counts) -> Bool) async {
        let deadline = ContinuousClock.now + .seconds(5)
        while !condition(counts), ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(2)) }
    }

    static func json(_ text: String) -> ECallHTTPResponse { .init(status: 200, body: Data(text.utf8)) }
    static func error(_ status: Int, _ code: String, _ detail: String) -> ECallHTTPResponse {
        json(#"{"error":{"code":"\#(code)","status":\#(status),"title":"\#(code)","detail":"\#(detail)"}}"#).with(status: status)
    }
}

extension ECallHTTPResponse {
    func with(status: Int) -> Self { .init(status: status, body: body) }
}
