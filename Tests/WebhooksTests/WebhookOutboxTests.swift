import Foundation
import Spool
import Testing
import TestSupport
import Webhooks

/// The outbox against a real HTTP receiver that verifies every signature with the Standard
/// Webhooks reference library (`standardwebhooks` from PyPI, Tests/S3/webhook_receiver.py).
@Suite(.serialized) struct WebhookOutboxTests {
    static let secretText = "whsec_" + Data((0..<32).map { UInt8($0 * 7 % 256) }).base64EncodedString()
    static let fast = RetrySchedule(first: .milliseconds(200), maximum: .seconds(1), giveUpAfter: .seconds(86_400))

    struct Job: Encodable, Sendable { let job: String; let n: Int }

    /// What the receiver logged: each delivery's id, type and whether its signature verified.
    struct Delivery: Decodable { let id: String?; let type: String?; let valid: Bool }
    static func deliveries(_ log: URL) -> [Delivery] {
        guard let text = try? String(contentsOf: log, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { try? JSONDecoder().decode(Delivery.self, from: Data($0.utf8)) }
    }

    static func setUp(_ name: String) throws -> (dir: URL, secretFile: URL, log: URL) {
        let dir = try Scene.tempDirectory(name)
        let secretFile = dir.appendingPathComponent("whsec")
        _ = FileManager.default.createFile(atPath: secretFile.path, contents: Data(secretText.utf8), attributes: [.posixPermissions: 0o600])
        return (dir, secretFile, dir.appendingPathComponent("received.jsonl"))
    }

    @Test("every event type reaches the receiver, and the reference library verifies every signature")
    func everyTypeVerified() async throws {
        if let missing = S3Venv.missing { Issue.record(Comment(rawValue: missing)); return }
        let (dir, secretFile, log) = try Self.setUp("webhooks")
        defer { try? FileManager.default.removeItem(at: dir) }
        let receiver = try await LocalServer.python("webhook_receiver.py", ["18621", secretFile.path, log.path], port: 18621)
        let outbox = try WebhookOutbox(directory: dir.appendingPathComponent("outbox"), url: URL(string: receiver.endpoint + "/hooks")!,
                                       secret: try WebhookSecret.read(file: secretFile.path), schedule: Self.fast)
        var ids: [String] = []
        for (n, type) in WebhookEventType.allCases.enumerated() {
            let event = try WebhookEvent(type, data: Job(job: "j-\(n)", n: n))
            try outbox.send(event)
            ids.append(event.id)
        }
        let running = Task { await outbox.run() }
        let done = await eventually(within: 60) { outbox.stats.delivered == ids.count }
        running.cancel()
        await running.value
        #expect(done)
        let got = Self.deliveries(log)
        #expect(got.allSatisfy { $0.valid }, "\(got.filter { !$0.valid })")
        #expect(Set(got.compactMap(\.id)) == Set(ids))

        // The receiver does check: an event signed with another secret is refused and logged.
        let forged = try WebhookOutbox(directory: dir.appendingPathComponent("forged"), url: URL(string: receiver.endpoint + "/hooks")!,
                                       secret: try WebhookSecret("whsec_" + Data(repeating: 7, count: 32).base64EncodedString()), schedule: Self.fast)
        try forged.send(WebhookEvent(.jobFailed, data: Job(job: "forged", n: 0), id: "forged-1"))
        let refusing = Task { await forged.run() }
        #expect(await eventually(within: 30) { forged.stats.failures >= 1 })
        refusing.cancel()
        await refusing.value
        await receiver.stop()
        #expect(forged.stats.delivered == 0)
        #expect(Self.deliveries(log).contains { $0.id == "forged-1" && !$0.valid })
        #expect(Set(got.compactMap(\.type)) == Set(WebhookEventType.allCases.map(\.rawValue)))
        #expect(outbox.stats.failures == 0 && outbox.stats.depth == 0)
    }

    @Test("a receiver down, the outbox restarted meanwhile, then the receiver up: every event arrives, once per id, every signature valid")
    func receiverDownThenUp() async throws {
        if let missing = S3Venv.missing { Issue.record(Comment(rawValue: missing)); return }
        let (dir, secretFile, log) = try Self.setUp("webhooks-down")
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = URL(string: "http://127.0.0.1:18622/hooks")!, outboxDir = dir.appendingPathComponent("outbox")
        let secret = try WebhookSecret.read(file: secretFile.path)
        let first = try WebhookOutbox(directory: outboxDir, url: url, secret: secret, schedule: Self.fast)
        var ids: [String] = []
        for n in 0..<5 {
            let event = try WebhookEvent(.jobStarted, data: Job(job: "j", n: n), id: "job-j.started.\(n)")
            try first.send(event)
            ids.append(event.id)
        }
        // Sent again after a "crash": the same ids add nothing.
        #expect(try !first.send(WebhookEvent(.jobStarted, data: Job(job: "j", n: 0), id: "job-j.started.0")))
        let failing = Task { await first.run() }
        #expect(await eventually(within: 60) { first.stats.failures >= 10 })
        failing.cancel()
        await failing.value
        #expect(first.stats.delivered == 0)

        let second = try WebhookOutbox(directory: outboxDir, url: url, secret: secret, schedule: Self.fast)
        #expect(second.stats.depth == 5)
        let receiver = try await LocalServer.python("webhook_receiver.py", ["18622", secretFile.path, log.path], port: 18622)
        let running = Task { await second.run() }
        let done = await eventually(within: 60) { second.stats.delivered == 5 && second.stats.depth == 0 }
        running.cancel()
        await running.value
        await receiver.stop()
        #expect(done)
        let got = Self.deliveries(log)
        #expect(got.allSatisfy { $0.valid })
        #expect(got.compactMap(\.id).sorted() == ids.sorted(), "each id exactly once: \(got.compactMap(\.id))")
    }

    @Test("an event no receiver takes for its whole window is dropped and counted, not retried forever")
    func expires() async throws {
        let dir = try Scene.tempDirectory("webhooks-expire")
        defer { try? FileManager.default.removeItem(at: dir) }
        let outbox = try WebhookOutbox(directory: dir.appendingPathComponent("outbox"), url: URL(string: "http://127.0.0.1:18623/")!,
                                       secret: try WebhookSecret(Self.secretText),
                                       schedule: RetrySchedule(first: .milliseconds(100), maximum: .milliseconds(200), giveUpAfter: .milliseconds(600)))
        try outbox.send(WebhookEvent(.jobFailed, data: Job(job: "x", n: 0)))
        let running = Task { await outbox.run() }
        let expired = await eventually(within: 30) { outbox.stats.expired == 1 }
        running.cancel()
        await running.value
        #expect(expired)
        // Tried (once or more: a slow machine fits fewer tries in 600 ms), then dropped.
        #expect(outbox.stats.depth == 0 && outbox.stats.failures >= 1)
    }
}
