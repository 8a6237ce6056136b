import ECall
import ECallStandIn
import FrameCrypto
import Foundation
import Logging
import Testing
import TestSupport

extension MediaScene {
/// STOMP against a real RabbitMQ (Web-STOMP, vhost `ecall`) started by `make test`, with the
/// stand-in backend checking device logins and routing signal messages. In the serialized
/// MediaScene: the stand-in that answers RabbitMQ's auth must own ECALL_AUTH_PORT alone.
@Suite(.serialized, .enabled(if: Broker.url != nil, "needs the local RabbitMQ: run `make test`"))
struct StompBrokerTests {
    func device(_ name: String, _ backend: ECallStandIn, _ url: String) async throws -> Broker.Device {
        try await Broker.Device.login(name, url: url, otp: backend.configuration.otp)
    }

    /// The peer's own 4 s credentials are renewed too: a send can fall between two connections.
    func sendWhenConnected(_ client: StompClient, body: Data, token: String) async throws {
        for _ in 0..<30 {
            if (try? await client.send("/exchange/ecall.signal.in", body: body, headers: [("authorization", "Bearer \(token)")])) != nil { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw StompError.notConnected
    }

    func signal(_ fields: [String: Any]) -> Data { try! JSONSerialization.data(withJSONObject: fields) }

    func first(_ stream: AsyncStream<StompFrame>, within: Duration = .seconds(5)) async -> StompFrame? {
        await withTaskGroup(of: StompFrame?.self) { group in
            group.addTask { for await f in stream { return f }; return nil }
            group.addTask { try? await Task.sleep(for: within); return nil }
            defer { group.cancelAll() }
            return await group.next()!
        }
    }

    @Test func aSignalSentToTheInExchangeReachesItsRecipientOnly() async throws {
        try await Broker.withBackend { backend, url in
            let host = try await device("host", backend, url), guest = try await device("guest", backend, url)
            let hostStomp = host.stomp(), guestStomp = guest.stomp()
            try await hostStomp.start()
            try await guestStomp.start()
            let hostInbox = await hostStomp.subscribe("/exchange/ecall.signal.out/\(host.session.deviceId)")
            let guestInbox = await guestStomp.subscribe("/exchange/ecall.signal.out/\(guest.session.deviceId)")
            try await Task.sleep(for: .milliseconds(300))
            let body = signal(["type": "request_aes_key", "callId": 5, "participantId": host.session.userId,
                               "participantDeviceId": host.session.deviceId, "senderId": guest.session.userId, "senderDeviceId": guest.session.deviceId])
            try await guestStomp.send("/exchange/ecall.signal.in", body: body,
                                      headers: [("content-type", "application/json"), ("authorization", "Bearer \(guest.session.accessToken)")])
            let got = try #require(await first(hostInbox))
            #expect(got.body == body)
            #expect(await first(guestInbox, within: .seconds(1)) == nil, "only the recipient gets it")
            #expect(backend.counters.signalsRouted == 1)

            // Without a valid bearer token the backend refuses to pass it on.
            try await guestStomp.send("/exchange/ecall.signal.in", body: body, headers: [("authorization", "Bearer forged")])
            #expect(await first(hostInbox, within: .seconds(1)) == nil)
            #expect(backend.counters.signalsRefused == 1)
            await hostStomp.close()
            await guestStomp.close()
        }
    }

    @Test func aWrongTokenIsRefusedWithAClearError() async throws {
        try await Broker.withBackend { backend, url in
            let d = try await device("eve", backend, url)
            let client = StompClient(options: .init(url: Broker.url!, host: "ecall"), logger: Logger(label: "test")) {
                .init(login: "device-\(d.session.deviceId)", passcode: "not-a-token")
            }
            await #expect { try await client.start() } throws: { error in
                guard (error as? StompError)?.isRefused == true else { return false }
                return "\(error)".contains("check the device login")
            }
            #expect(backend.counters.refusedBrokerLogins >= 1)
            // Another device's routing key cannot be read: the broker drops the connection that
            // asks (the client reconnects), and nothing arrives.
            let stomp = d.stomp()
            try await stomp.start()
            let stolen = await stomp.subscribe("/exchange/ecall.signal.out/\(d.session.deviceId + 1)")
            #expect(await first(stolen, within: .seconds(2.5)) == nil)
            #expect(await stomp.counters.connections >= 2, "dropped by the broker, then reconnected")
            await stomp.close()
        }
    }

    @Test func heartBeatsFlowAndExpiringCredentialsAreRenewedWithoutLosingTheSubscription() async throws {
        try await Broker.withBackend({ $0.rabbitTokenLifetime = 4 }) { backend, url in
            let d = try await device("bot", backend, url), peer = try await device("peer", backend, url)
            let stomp = d.stomp(heartBeat: .seconds(1)), peerStomp = peer.stomp()
            try await stomp.start()
            try await peerStomp.start()
            let inbox = await stomp.subscribe("/exchange/ecall.signal.out/\(d.session.deviceId)")
            // The token lives 4 s and is renewed 2 s before: by 5 s a second connection is up.
            var ups = stomp.connections.makeAsyncIterator()
            try await Task.sleep(for: .seconds(5))
            #expect(await stomp.counters.connections >= 2)
            #expect(await stomp.counters.heartBeatsReceived >= 2, "the server's 1 s heart-beats")
            _ = await ups.next()
            try await Task.sleep(for: .milliseconds(300))
            let body = signal(["type": "participant_joined", "callId": 1, "participantId": peer.session.userId, "participantDeviceId": d.session.deviceId])
            try await sendWhenConnected(peerStomp, body: body, token: peer.session.accessToken)
            #expect(await first(inbox)?.body == body, "subscribed again on the new connection")
            await stomp.close()
            await peerStomp.close()
        }
    }
}

}
