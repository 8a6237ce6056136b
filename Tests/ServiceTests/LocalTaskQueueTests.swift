import Foundation
import Logging
@testable import Service
import Spool
import Testing
import TestSupport
import Webhooks

/// One instance's task queue (the state folder's `tasks/`) with the cluster's semantics, and
/// the task worker over it delivering to a real receiver that verifies every signature. A
/// "restart" is a second queue on the same folder; times are set in the past, never waited for.
@Suite(.serialized) struct LocalTaskQueueTests {
    /// A first retry 2 s on: "not due yet" must hold between two calls on a loaded machine (200 ms
    /// did not, with 8 suites at once).
    static let policy = TaskPolicy<DatabaseInstant>(schedule: RetrySchedule(first: .seconds(2), maximum: .seconds(2), giveUpAfter: .seconds(86_400)))
    static let log = Logger(label: "test.tasks")

    static func queue(_ dir: URL) throws -> LocalTaskQueue {
        try LocalTaskQueue(directory: dir.appendingPathComponent("tasks"), policy: policy, logger: log)
    }

    static func event(_ job: String, _ id: String, _ type: WebhookEventType = .jobStarted) throws -> NewTask {
        NewTask(webhook: try WebhookEvent(type, data: JobEvent(job: job, kind: "recording", room: 1234), id: id), job: job)
    }

    @Test("queued once per key, a job's tasks one after the other, kept across a restart with their tries; a claim a crash cut short is available again")
    func orderAndRestart() async throws {
        let dir = try Scene.tempDirectory("local-tasks")
        defer { try? FileManager.default.removeItem(at: dir) }
        let q = try Self.queue(dir)
        #expect(try q.enqueue(Self.event("rec-1", "rec-1.started.0")))
        #expect(try !q.enqueue(Self.event("rec-1", "rec-1.started.0")), "one per key")
        #expect(try q.enqueue(Self.event("rec-1", "rec-1.paused.1", .jobPaused)))
        #expect(try q.enqueue(Self.event("rec-2", "rec-2.started.0")))
        let first = try await q.claim([.webhook], session: nil, limit: 16)
        #expect(first.map(\.key) == ["rec-1.started.0", "rec-2.started.0"] && first.map(\.seq) == [1, 1])
        #expect(try await q.claim([.webhook], session: nil, limit: 16).isEmpty, "rec-1's next waits for its first")
        guard case .retry(1, "503") = try await q.finish(first[0], .retry("503"), cancelled: false) else { Issue.record("not retried"); return }
        #expect(try await q.claim([.webhook], session: nil, limit: 16).isEmpty, "its first is not due yet, its next still waits")
        #expect(try await q.finish(first[0], .done, cancelled: false) == nil, "no longer claimed")

        // A crash: rec-2's claim is gone with the process; rec-1's try and its wait are on disk.
        let again = try Self.queue(dir)
        #expect(try await again.depth(.webhook) == 3)
        #expect(try await again.claim([.webhook], session: nil, limit: 16).map(\.key) == ["rec-2.started.0"])
        var due: [QueuedTask] = []
        let deadline = ContinuousClock.now + .seconds(10)
        while due.isEmpty, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
            due = try await again.claim([.webhook], session: nil, limit: 16)
        }
        let retried = try #require(due.first, "rec-1's first is due again after its backoff")
        #expect(retried.key == "rec-1.started.0" && retried.attempts == 1)
        #expect(try await again.finish(retried, .done, cancelled: false) == .complete)
        #expect(try await again.claim([.webhook], session: nil, limit: 16).map(\.key) == ["rec-1.paused.1"])
        #expect(try await again.depth(.webhook) == 2)
        #expect(try await again.rescue().isEmpty, "this process is the only claimer")
    }

    @Test("a webhook a day old is discarded at its next failure; a shutdown's try is released uncounted")
    func expiryAndRelease() async throws {
        let dir = try Scene.tempDirectory("local-tasks-expiry")
        defer { try? FileManager.default.removeItem(at: dir) }
        let q = try Self.queue(dir)
        try q.enqueue(Self.event("rec-1", "rec-1.started.0"), now: Date().addingTimeInterval(-2 * 86_400))
        try q.enqueue(Self.event("rec-2", "rec-2.started.0"))
        let claimed = try await q.claim([.webhook], session: nil, limit: 16)
        #expect(try await q.finish(claimed[0], .retry("down"), cancelled: false) == .discard(attempts: 1, why: "down", expired: true))
        #expect(try await q.finish(claimed[1], .retry("cancelled"), cancelled: true) == .release)
        let left = try Self.queue(dir)
        #expect(try await left.claim([.webhook], session: nil, limit: 16).map { "\($0.key):\($0.attempts)" } == ["rec-2.started.0:0"])
    }

    @Test("the worker over the state folder: a receiver down, the process restarted, the receiver up: every event arrives once, a job's in order; an older outbox directory's events adopted")
    func workerDelivers() async throws {
        if let missing = S3Venv.missing { Issue.record(Comment(rawValue: missing)); return }
        let dir = try Scene.tempDirectory("local-tasks-worker")
        defer { try? FileManager.default.removeItem(at: dir) }
        let port = try RelayServers.freePort()
        let secret = dir.appendingPathComponent("whsec")
        _ = FileManager.default.createFile(atPath: secret.path, contents: Data(("whsec_" + Data(repeating: 7, count: 32).base64EncodedString()).utf8),
                                           attributes: [.posixPermissions: 0o600])
        func worker(_ q: LocalTaskQueue) throws -> TaskWorker {
            TaskWorker(queue: q, webhooks: try WebhookOutbox(directory: dir.appendingPathComponent("webhooks"), url: URL(string: "http://127.0.0.1:\(port)/hooks")!,
                                                              secret: try WebhookSecret.read(file: secret.path), schedule: Self.policy.schedule))
        }
        // An older version's outbox left an event.
        let old = try Spool<WebhookEvent>(directory: dir.appendingPathComponent("webhooks"), what: "old outbox")
        try old.put("old.started.0", try WebhookEvent(.jobStarted, data: JobEvent(job: "old", kind: "recording", room: 1), id: "old.started.0"))
        let q = try Self.queue(dir)
        JobPublishing.adoptOutbox(dir.appendingPathComponent("webhooks"), into: q, logger: Self.log)
        #expect(old.load().entries.isEmpty)
        for (id, type) in [("rec-1.started.0", WebhookEventType.jobStarted), ("rec-1.paused.1", .jobPaused), ("rec-1.resumed.1", .jobResumed)] {
            try q.enqueue(Self.event("rec-1", id, type))
        }
        let down = try worker(q)
        let tried = try await down.round(session: nil)
        #expect(tried == 2 && down.webhooks?.stats.failures == 2, "rec-1's first and the adopted one, each failed once")

        let receiver = try await WebhookReceiver.start(port: port, in: dir)
        let restarted = try worker(try Self.queue(dir))
        let running = Task { await restarted.run(session: { nil }, idle: .milliseconds(50), log: Self.log) }
        let ids = ["old.started.0", "rec-1.started.0", "rec-1.paused.1", "rec-1.resumed.1"]
        // The receiver logs an event before it answers: its task is finished only once the answer came.
        let all = await eventually(within: 20) {
            guard ids.allSatisfy({ !receiver.events(id: $0).isEmpty }) else { return false }
            return (try? await restarted.queue.depth(.webhook)) == 0
        }
        running.cancel()
        await running.value
        #expect(all)
        #expect(ids.map { receiver.events(id: $0).count } == [1, 1, 1, 1], "each once")
        let received = try String(contentsOf: receiver.received, encoding: .utf8).split(separator: "\n").compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["id"] as? String
        }.filter { $0.hasPrefix("rec-1") }
        #expect(received == ["rec-1.started.0", "rec-1.paused.1", "rec-1.resumed.1"], "in order")
        #expect(try await restarted.queue.depth(.webhook) == 0)
        await receiver.stop()
    }
}
