import ECall
import ECallStandIn
import FrameCrypto
import Foundation
import Logging
import Testing
import TestSupport

/// The REST client against the stand-in backend over real HTTP on 127.0.0.1.
@Suite(.serialized) struct ECallClientTests {
    let dir: URL
    init() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("sfubot-ecall-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    }

    func withBackend(_ body: (ECallStandIn, String) async throws -> Void) async throws {
        let backend = ECallStandIn()
        let url = try await backend.start()
        do { try await body(backend, url) } catch { await backend.stop(); throw error }
        await backend.stop()
    }

    func client(_ url: String, secret: String = "sfubot-dev-secret", session: String? = nil, timeout: Duration = .seconds(20)) throws -> ECallClient {
        var configuration = ECallClient.Configuration(baseURL: url, apiID: "sfubot-dev", apiSecret: secret, sessionFile: session)
        configuration.timeout = timeout
        return try ECallClient(configuration: configuration, logger: Logger(label: "test"))
    }

    func identity(_ name: String, key: DevicePublicKey) -> LoginIdentity {
        LoginIdentity(email: "\(name)@example.test", displayName: name, publicKey: key.wire, identifier: "sfubot-\(name)")
    }

    @Test func logsInKeepsTheSessionIn0600AndSurvivesARestart() async throws {
        try await withBackend { backend, url in
            let key = try DeviceIdentity.generate(.p256).publicKey
            let sessionFile = dir.appendingPathComponent("session.json").path
            let c = try client(url, session: sessionFile)
            let me = identity("bot", key: key)
            let challenge = try await c.login(me)
            await #expect(throws: ECallError.rejected(status: 401, code: "ErrInvalidOTP", detail: "wrong code")) {
                try await c.verifyLogin(code: "000000", me)
            }
            let session = try await c.verifyLogin(code: backend.configuration.otp, me)
            #expect(session.userId == challenge.userId)
            let mode = (try FileManager.default.attributesOfItem(atPath: sessionFile)[.posixPermissions] as? NSNumber)?.intValue
            #expect(mode == 0o600)

            // A new client (a restarted bot) reads the session and is logged in.
            let again = try client(url, session: sessionFile)
            #expect(await again.session == session)
            try await again.registerDevice(publicKey: key.wire, publicKeyHash: key.hash)
            let keys = try await again.publicKeys(userIDs: [session.userId])
            #expect(keys == ["\(session.userId)_\(session.deviceId)": key.wire])
            let credentials = try await again.credentials()
            #expect(!credentials.rabbitmqToken.isEmpty)
            // A hash that is not SHA-256 of the key is refused, as the real backend does.
            await #expect(throws: ECallError.self) { try await again.registerDevice(publicKey: key.wire, publicKeyHash: String(repeating: "0", count: 64)) }
        }
    }

    @Test("with coturn's shared secret, /credentials gives REST API credentials coturn would accept: EXPIRY:USER, base64(HMAC-SHA1); with its TLS port, tlsUrl is turns:",
          arguments: [nil, 5349])
    func turnRESTCredentials(tlsPort: Int?) async throws {
        var configuration = ECallStandIn.Configuration()
        configuration.turn = .init(url: "turn:127.0.0.1:3478", secret: "north-wind", tlsPort: tlsPort)
        let backend = ECallStandIn(configuration: configuration)
        let url = try await backend.start()
        do {
            let key = try DeviceIdentity.generate(.p256).publicKey
            let c = try client(url)
            let me = identity("turn", key: key)
            _ = try await c.login(me)
            let session = try await c.verifyLogin(code: backend.configuration.otp, me)
            let before = Date().timeIntervalSince1970
            let credentials = try await c.credentials()
            #expect(credentials.noneTlsUrl == "turn:127.0.0.1:3478")
            // Without TLS TURN the stand-in's tlsUrl is its Web-STOMP URL (the agent's fallback for `stomp`).
            #expect(credentials.tlsUrl == (tlsPort.map { "turns:127.0.0.1:\($0)?transport=tcp" } ?? configuration.stompURL))
            let parts = (credentials.turnUsername ?? "").split(separator: ":")
            #expect(parts.count == 2 && parts.last.map(String.init) == "\(session.userId)", "\(credentials.turnUsername ?? "none")")
            let expiry = parts.first.flatMap { Double($0) } ?? 0
            #expect(expiry >= before + 86_400 - 1 && expiry <= before + 86_400 + 60, "valid for the configured day: \(expiry - before) s")
            // The same HMAC as Python's hmac.new(secret, username, sha1) (the coturn REST API).
            let expected = try await Self.pythonHMAC(secret: "north-wind", username: credentials.turnUsername ?? "")
            #expect(credentials.turnPassword == expected)
        } catch { await backend.stop(); throw error }
        await backend.stop()
    }

    static func pythonHMAC(secret: String, username: String) async throws -> String {
        let script = "import hmac,hashlib,base64,sys; print(base64.b64encode(hmac.new(sys.argv[1].encode(), sys.argv[2].encode(), hashlib.sha1).digest()).decode())"
        let run = try await ChildProcess.run("/usr/bin/python3", ["-c", script, secret, username])
        return run.outText.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func everyRequestIsSignedAndAWrongSecretIsRefused() async throws {
        try await withBackend { backend, url in
            let key = try DeviceIdentity.generate(.p256).publicKey
            let forged = try client(url, secret: "not-the-secret")
            await #expect(throws: ECallError.rejected(status: 401, code: "ErrInvalidSignature", detail: "X-Signature does not match the request")) {
                _ = try await forged.login(identity("eve", key: key))
            }
            #expect(backend.counters.badSignatures == 1)
            let c = try client(url)
            _ = try await c.login(identity("bot", key: key))
            _ = try await c.verifyLogin(code: backend.configuration.otp, identity("bot", key: key))
            _ = try await c.credentials()
            #expect(backend.counters.badSignatures == 1, "the right secret signs GET (empty body) and POST alike")
        }
    }

    @Test func anExpiredAccessTokenIsRefreshedOnceAndTheRequestRetried() async throws {
        try await withBackend { backend, url in
            let key = try DeviceIdentity.generate(.rsa).publicKey
            let sessionFile = dir.appendingPathComponent("s.json").path
            let c = try client(url, session: sessionFile)
            _ = try await c.login(identity("bot", key: key))
            let first = try await c.verifyLogin(code: backend.configuration.otp, identity("bot", key: key))
            backend.expireAccessTokens()
            _ = try await c.credentials()
            #expect(backend.counters.expiredTokens == 1 && backend.counters.refreshes == 1)
            #expect(await c.refreshes == 1)
            let now = try #require(await c.session)
            #expect(now.accessToken != first.accessToken && now.userId == first.userId)
            #expect(try SessionStore(path: sessionFile).load() == now, "the new tokens are kept")
        }
    }

    @Test func callsStartJoinListAndEnd() async throws {
        try await withBackend { backend, url in
            let caller = try client(url), callee = try client(url)
            let callerKey = try DeviceIdentity.generate(.p256), calleeKey = try DeviceIdentity.generate(.p256)
            _ = try await caller.login(identity("caller", key: callerKey.publicKey))
            let a = try await caller.verifyLogin(code: backend.configuration.otp, identity("caller", key: callerKey.publicKey))
            _ = try await callee.login(identity("callee", key: calleeKey.publicKey))
            let b = try await callee.verifyLogin(code: backend.configuration.otp, identity("callee", key: calleeKey.publicKey))

            let callKey = CallKey.random()
            let wrapped = try KeyWrap.wrap(callKey, for: calleeKey.publicKey, from: callerKey)
            let call = try await caller.startCall(.init(roomId: 4242, calleeIds: [b.userId], encryptedAESKeys: ["\(b.userId)_\(b.deviceId)": wrapped], isVideo: false))
            #expect(call.janusRoomId == 4242)
            // The callee finds it by polling, with its own wrapped key, and opens the key.
            let active = try await callee.activeCalls()
            let found = try #require(active.first { $0.id == call.id })
            let opened = try KeyWrap.unwrap(try #require(found.encryptedAESKey), with: calleeKey)
            #expect(opened.key.symmetricKey == callKey.symmetricKey && opened.sender == callerKey.publicKey)
            _ = try await callee.join(callID: call.id)
            let people = try await caller.participants(callID: call.id)
            #expect(Set(people.map(\.userId)) == [a.userId, b.userId])
            #expect(people.first { $0.userId == a.userId }?.isHostKey == true)
            try await caller.endCall(callID: call.id)
            #expect(try await callee.activeCalls().isEmpty)
            await #expect(throws: ECallError.self) { _ = try await callee.join(callID: call.id) }
        }
    }

    @Test func aStandInOnATakenPortFailsInsteadOfWaiting() async throws {
        let first = ECallStandIn()
        let url = try await first.start()
        let port = try #require(Int(url.split(separator: ":").last!.split(separator: "/").first!))
        await #expect(throws: (any Error).self) { _ = try await ECallStandIn().start(port: port) }
        await first.stop()
    }

    @Test func aDeadBackendIsAClearError() async throws {
        // The HTTP client retries a refused connection until the request's deadline.
        let c = try client("http://127.0.0.1:1/app/api", timeout: .seconds(2))
        await #expect { _ = try await c.login(identity("bot", key: try DeviceIdentity.generate(.p256).publicKey)) } throws: { error in
            guard let error = error as? ECallError, error.isUnreachable else { return false }
            return "\(error)".contains("unreachable")
        }
        await #expect(throws: ECallError.notLoggedIn) { _ = try await c.credentials() }
    }
}
