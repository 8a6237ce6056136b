import ECall
import Foundation
import Logging
import Synchronization
import Locking

extension ECallStandIn {
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

    func route(_ frame: StompFrame, via client: StompClient) async {
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
