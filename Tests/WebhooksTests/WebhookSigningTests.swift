import Foundation
import Testing
import Webhooks

@Suite struct WebhookSigningTests {
    @Test("the Standard Webhooks spec's own example: the same v1 signature")
    func specVector() throws {
        let secret = try WebhookSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
        let signature = secret.signature(id: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: 1_614_265_330, body: Array("{\"test\": 2432232314}".utf8))
        #expect(signature == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
    }

    @Test("secrets: whsec_ and base64 of 24+ bytes, from a 0600 file only; never in a description")
    func secrets() throws {
        #expect(throws: WebhookError.self) { try WebhookSecret("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw") }
        #expect(throws: WebhookError.self) { try WebhookSecret("whsec_c2hvcnQ=") }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sfubot-whsec-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let good = dir.appendingPathComponent("good"), open = dir.appendingPathComponent("open")
        let text = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n"
        _ = FileManager.default.createFile(atPath: good.path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600])
        _ = FileManager.default.createFile(atPath: open.path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o644])
        let secret = try WebhookSecret.read(file: good.path)
        #expect(!"\(secret)".contains("MfKQ"))
        #expect { try WebhookSecret.read(file: open.path) } throws: { "\($0)".contains("chmod 600") }
    }

    @Test("an event's body is the spec's envelope with the issue's type names; ids are given or random, never a path")
    func events() throws {
        struct Finished: Encodable, Sendable { let job: String }
        let event = try WebhookEvent(.jobFinished, data: Finished(job: "j1"), id: "job-j1.finished", now: Date(timeIntervalSince1970: 0))
        #expect(String(decoding: event.body, as: UTF8.self) == #"{"data":{"job":"j1"},"timestamp":"1970-01-01T00:00:00Z","type":"job.finished"}"#)
        #expect(try WebhookEvent(.jobStarted, data: Finished(job: "x")).id.hasPrefix("msg_"))
        #expect(throws: WebhookError.self) { try WebhookEvent(.jobStarted, data: Finished(job: "x"), id: "../etc") }
        #expect(WebhookEventType.allCases.map(\.rawValue) == ["job.started", "job.reconnecting", "job.failed_over", "job.paused",
                                                             "job.resumed", "job.finished", "job.failed", "upload.failed",
                                                             "relay.started", "relay.reconnecting", "relay.ended"])
    }
}
