public import ECall
public import ECallStandIn
public import FrameCrypto
import Foundation
public import Logging

/// The local RabbitMQ that `make test` starts, and the stand-in backend beside it.
public enum Broker {
    /// A device logged in to the stand-in, its key registered: REST client, identity, session.
    public struct Device: Sendable {
        public let client: ECallClient
        public let identity: DeviceIdentity
        public let session: SessionState

        public static func login(_ name: String, kind: DeviceIdentity.Kind = .p256, url: String, otp: String) async throws -> Device {
            let identity = try DeviceIdentity.generate(kind)
            let client = try ECallClient(configuration: .init(baseURL: url, apiID: "sfubot-dev", apiSecret: "sfubot-dev-secret"), logger: Logger(label: "test.device"))
            let who = LoginIdentity(email: "\(name)@example.test", displayName: name, publicKey: identity.publicKey.wire, identifier: "device-\(name)")
            _ = try await client.login(who)
            let session = try await client.verifyLogin(code: otp, who)
            try await client.registerDevice(publicKey: identity.publicKey.wire, publicKeyHash: identity.publicKey.hash)
            return Device(client: client, identity: identity, session: session)
        }

        /// A STOMP client logging in as this device with fresh credentials each time.
        public func stomp(heartBeat: Duration = .seconds(10), logger: Logger = Logger(label: "test.stomp")) -> StompClient {
            var o = StompClient.Options(url: Broker.url!, host: "ecall")
            o.heartBeat = heartBeat
            o.renewBefore = .seconds(2)
            let client = self.client, id = session.deviceId
            return StompClient(options: o, logger: logger) {
                let c = try await client.credentials()
                return .init(login: "device-\(id)", passcode: c.rabbitmqToken, expires: c.rabbitmqTokenExpiresAt.map(Date.init(timeIntervalSince1970:)))
            }
        }
    }

    public static let url = ProcessInfo.processInfo.environment["SFUBOT_STOMP_URL"]
    public static let authPort = Int(ProcessInfo.processInfo.environment["ECALL_AUTH_PORT"] ?? "8481") ?? 8481

    /// Runs `body` with the stand-in serving on the port RabbitMQ asks for auth and routing
    /// signal messages; it is stopped (the port free again) before this returns.
    public static func withBackend(_ configure: (inout ECallStandIn.Configuration) -> Void = { _ in },
                            _ body: (ECallStandIn, String) async throws -> Void) async throws {
        var configuration = ECallStandIn.Configuration()
        configuration.stompURL = url!
        configure(&configuration)
        let backend = ECallStandIn(configuration: configuration)
        let api = try await backend.start(port: authPort)
        do {
            try await backend.startRouting(stompURL: url!)
            try await body(backend, api)
        } catch {
            await backend.stopRouting()
            await backend.stop()
            throw error
        }
        await backend.stopRouting()
        await backend.stop()
    }
}
