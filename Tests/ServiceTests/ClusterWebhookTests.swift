import Foundation
import Logging
import ObjectStore
@testable import Service
import Spool
import Testing
import TestSupport
import Webhooks

/// The webhook outbox with `--database` (issue 44 items 1, 3, 5) at the store's level: two
/// store values under different instance names on the real PostgreSQL (`ClusterStoreTests.two`),
/// rows back-dated instead of waiting, and a real receiver that verifies every signature with
/// the Standard Webhooks library (Tests/S3/webhook_receiver.py). Before the table, each
/// instance kept its events in its own directory: what a dead instance queued waited for it,
/// two instances each sent their own `upload.failed`, and a waiting job DELETEd sent nothing.
@Suite(.serialized) struct ClusterWebhookTests {
    /// Retries in 200 ms to 1 s (the production schedule's shape, shorter), a day to give up.
    static let fast = RetrySchedule(first: .milliseconds(200), maximum: .seconds(1), giveUpAfter: .seconds(86_400))

    struct Setup {
        let t: ClusterStoreTests.Two
        let a: ClusterStore, b: ClusterStore
        let dir: URL
        let port: Int
        let secret: URL

        var url: URL { URL(string: "http://127.0.0.1:\(port)/hooks")! }
        var received: URL { dir.appendingPathComponent("received.jsonl") }

        /// `store`'s task worker, posting through an outbox of its own (a directory per
        /// instance, unused), with the fast schedule as the task queue's retry policy.
        func delivery(_ store: ClusterStore) throws -> TaskWorker {
            let outbox = try WebhookOutbox(directory: dir.appendingPathComponent("outbox-\(store.instance)"), url: url,
                                           secret: try WebhookSecret.read(file: secret.path), schedule: ClusterWebhookTests.fast)
            var store = store
            store.taskPolicy.schedule = ClusterWebhookTests.fast
            return TaskWorker(queue: store, webhooks: outbox)
        }

        func receiver() async throws -> WebhookReceiver { try await WebhookReceiver.start(port: port, in: dir) }

        /// What the receiver accepted, in the order it accepted it: (webhook id, type, data).
        func deliveries() -> [(id: String, type: String, data: [String: Any])] {
            ((try? String(contentsOf: received, encoding: .utf8)) ?? "").split(separator: "\n").compactMap { line in
                guard let o = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], o["valid"] as? Bool == true,
                      let id = o["id"] as? String, let type = o["type"] as? String else { return nil }
                return (id, type, o["data"] as? [String: Any] ?? [:])
            }
        }

        /// The ids delivered for `job`, in order.
        func delivered(_ job: String) -> [String] { deliveries().filter { $0.data["job"] as? String == job }.map(\.id) }

        func close() {
            t.close()
            try? FileManager.default.removeItem(at: dir)
        }
    }

    /// A scene on database `name` whose stores queue webhooks; the receiver's secret written
    /// (0600, as WebhookReceiver writes it) before any receiver runs.
    static func scene(_ pg: LocalPostgres, _ name: String, port: Int) async throws -> Setup {
        let t = try await ClusterStoreTests.two(pg, name)
        var a = t.a, b = t.b
        (a.webhooks, b.webhooks) = (true, true)
        let dir = try Scene.tempDirectory("cluster-webhooks-\(name)")
        let secret = dir.appendingPathComponent("whsec")
        _ = FileManager.default.createFile(atPath: secret.path, contents: Data(("whsec_" + Data(repeating: 7, count: 32).base64EncodedString()).utf8),
                                           attributes: [.posixPermissions: 0o600])
        return Setup(t: t, a: a, b: b, dir: dir, port: port, secret: secret)
    }

    static func event(_ type: WebhookEventType, _ job: String, _ id: String, reason: String? = nil) throws -> WebhookEvent {
        try WebhookEvent(type, data: JobEvent(job: job, kind: "recording", room: 1234, reason: reason), id: id)
    }

    /// Rounds of `delivery` until `done` or 30 s.
    static func deliver(_ delivery: TaskWorker, session: Int64, until done: () -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            if done() { return true }
            if try await delivery.round(session: session) == 0 { try await Task.sleep(for: .milliseconds(100)) }
        }
        return done()
    }

    @Test("events a dead instance queued are delivered by another, in order per job, each once (issue 44 item 1)")
    func deadInstancesEvents() async throws {
        if let missing = S3Venv.missing { Issue.record(Comment(rawValue: missing)); return }
        try await ClusterStoreTests.withServer { pg in
            let s = try await Self.scene(pg, "deadqueuer", port: 18671)
            defer { s.close() }
            let receiver = try await s.receiver()
            for id in ["rec-1", "rec-2"] {
                try await s.a.insert(id: id, spec: ClusterStoreTests.spec, created: Date())
                _ = try #require(try await s.a.claim(session: 1, grace: ClusterStoreTests.grace))
            }
            // a queues, and claims the first event of each job (its POSTs under way)...
            for (job, id) in [("rec-1", "rec-1.started.0"), ("rec-2", "rec-2.started.0"), ("rec-1", "rec-1.paused.1"), ("rec-1", "rec-1.resumed.1")] {
                let type: WebhookEventType = id.contains("paused") ? .jobPaused : id.contains("resumed") ? .jobResumed : .jobStarted
                #expect(try await s.a.enqueue(Self.event(type, job, id), job: job))
            }
            let claimed = try await s.a.claim([.webhook], session: 1, limit: 16)
            #expect(claimed.map(\.key) == ["rec-1.started.0", "rec-2.started.0"], "one job's next event waits for the one before")
            let b = try s.delivery(s.b)
            #expect(try await b.round(session: 2) == 0, "a's claims hold while its session lives")

            // ...and dies: its session gone, its leases run out (back-dated). b takes rec-1 and
            // ends it failed: job.failed is queued in the end's transaction, after a's events.
            _ = try await s.t.sql("UPDATE instance_sessions SET gone_since = now() WHERE key = 1; UPDATE jobs SET lease_until = now() - interval '10 ms'")
            let taken = try #require(try await s.b.claim(session: 2, grace: ClusterStoreTests.grace))
            #expect(taken.row.id == "rec-1" && taken.previous == "a")
            _ = try await s.b.end("rec-1", .init(state: .failed, ended: Date(), error: "the room was destroyed"), status: nil)

            let all = ["rec-1.started.0", "rec-1.paused.1", "rec-1.resumed.1", "rec-1.failed", "rec-2.started.0"]
            #expect(try await Self.deliver(b, session: 2) { s.deliveries().count >= all.count })
            #expect(s.delivered("rec-1") == ["rec-1.started.0", "rec-1.paused.1", "rec-1.resumed.1", "rec-1.failed"])
            #expect(s.delivered("rec-2") == ["rec-2.started.0"])
            #expect(s.deliveries().map(\.id).sorted() == all.sorted(), "each once: \(s.deliveries().map(\.id))")
            #expect(s.deliveries().first { $0.id == "rec-1.failed" }?.data["reason"] as? String == "the room was destroyed")
            #expect(try await s.t.sql("SELECT count(*) FROM tasks WHERE state <> 'completed'") == "0")
            await receiver.stop()
        }
    }

    @Test("a receiver failing, then healthy: every event delivered afterwards in order per job; only each job's first one tried meanwhile; one given up after its day lets the next go")
    func receiverFailingThenHealthy() async throws {
        if let missing = S3Venv.missing { Issue.record(Comment(rawValue: missing)); return }
        try await ClusterStoreTests.withServer { pg in
            let s = try await Self.scene(pg, "failing", port: 18672)
            defer { s.close() }
            let events: [(String, WebhookEventType, String)] = [
                ("rec-1", .jobStarted, "rec-1.started.0"), ("rec-2", .jobStarted, "rec-2.started.0"), ("rec-1", .jobPaused, "rec-1.paused.1"),
                ("rec-2", .jobFailed, "rec-2.failed"), ("rec-1", .jobResumed, "rec-1.resumed.1"), ("rec-3", .jobStarted, "rec-3.started.0"),
                ("rec-3", .jobFailed, "rec-3.failed"),
            ]
            for (job, type, id) in events { try await s.a.enqueue(Self.event(type, job, id), job: job) }
            // rec-3's first event was queued two days ago: its first failure gives it up.
            _ = try await s.t.sql("UPDATE tasks SET created = now() - interval '2 days' WHERE key = 'rec-3.started.0'")
            let b = try s.delivery(s.b)
            let failing = Task { await b.run(session: { 2 }, idle: .milliseconds(50), log: .init(label: "test")) }
            let tried = await eventually(within: 30) { (b.webhooks?.stats.failures ?? 0) >= 6 }
            failing.cancel()
            await failing.value
            let stats = try #require(b.webhooks?.stats)
            #expect(tried, "\(stats)")
            #expect(stats.delivered == 0 && stats.expired == 1)
            let attempts = try await s.t.sql("SELECT string_agg(key || '=' || (attempts > 0)::text, ' ' ORDER BY id) FROM tasks")
            #expect(attempts == "rec-1.started.0=true rec-2.started.0=true rec-1.paused.1=false rec-2.failed=false rec-1.resumed.1=false rec-3.started.0=true rec-3.failed=true",
                    "a job's later events are not tried before its first is delivered")
            #expect(try await s.t.sql("SELECT state = 'discarded' FROM tasks WHERE key = 'rec-3.started.0'") == "t")

            // Healthy: the backoff's waits back-dated, not waited for.
            let receiver = try await s.receiver()
            _ = try await s.t.sql("UPDATE tasks SET run_at = now()")
            #expect(try await Self.deliver(b, session: 2) { s.deliveries().count >= 6 })
            #expect(s.delivered("rec-1") == ["rec-1.started.0", "rec-1.paused.1", "rec-1.resumed.1"])
            #expect(s.delivered("rec-2") == ["rec-2.started.0", "rec-2.failed"])
            #expect(s.delivered("rec-3") == ["rec-3.failed"], "the one given up is never sent")
            #expect(s.deliveries().count == 6)
            await receiver.stop()
        }
    }

    @Test("two instances report the same upload failure: queued once, delivered once with one body (issue 44 item 5)")
    func uploadFailedOnce() async throws {
        if let missing = S3Venv.missing { Issue.record(Comment(rawValue: missing)); return }
        try await ClusterStoreTests.withServer { pg in
            let s = try await Self.scene(pg, "uploadfailed", port: 18673)
            defer { s.close() }
            try await s.a.insert(id: "rec-u", spec: ClusterStoreTests.spec, created: Date())
            let key = "rec/rec-u/audio.mka"
            // Each instance with its own path to the file: a tried it once and died before its
            // try was counted; b, which took the task over, fails the same try again.
            let (onA, onB) = ("/disk-a/rec-u/audio.mka", "/disk-b/rec-u/audio.mka")
            let first = try #require(JobPublishing.uploadFailedEvent(job: "rec-u", file: onA, key: key, "a: the store answered 503", attempts: 1))
            #expect(try await s.a.enqueue(first, job: "rec-u"))
            // Both queue the same event with their own bodies: the first body stays.
            let id = "upload-\(LocalTaskQueue.fileID(key: key)).failed.0"
            let again = try #require(JobPublishing.uploadFailedEvent(job: "rec-u", file: onB, key: key, "b: the store answered 503", attempts: 1))
            #expect(again.id == id)
            #expect(try await !s.b.enqueue(again, job: "rec-u"))
            // The second try to the tenth tell nothing.
            #expect((2...10).allSatisfy { JobPublishing.uploadFailedEvent(job: "rec-u", file: onB, key: key, "b", attempts: $0) == nil })
            #expect(try await s.t.sql("SELECT count(*) || ':' || min(key) FROM tasks") == "1:\(id)")

            let receiver = try await s.receiver()
            for store in [s.a, s.b] { try await s.delivery(store).round(session: store.instance == "a" ? 1 : 2) }
            #expect(await eventually(within: 10) { !s.deliveries().isEmpty })
            try await Task.sleep(for: .milliseconds(300))
            let got = s.deliveries()
            #expect(got.count == 1 && got.first?.type == "upload.failed", "\(got.map(\.id))")
            #expect(got.first?.data["reason"] as? String == "a: the store answered 503" && got.first?.data["file"] as? String == onA)
            #expect(got.first?.data["attempts"] as? Int == 1)
            await receiver.stop()
        }
    }

    @Test("a waiting job DELETEd gets one job.finished, whichever instance is asked and however often (issue 44 item 3)")
    func waitingJobDeleted() async throws {
        if let missing = S3Venv.missing { Issue.record(Comment(rawValue: missing)); return }
        try await ClusterStoreTests.withServer { pg in
            let s = try await Self.scene(pg, "waitingdeleted", port: 18674)
            defer { s.close() }
            try await s.a.insert(id: "rec-w", spec: ClusterStoreTests.spec, created: Date())
            guard case .settled = try await s.b.requestStop("rec-w", grace: ClusterStoreTests.grace) else { Issue.record("not settled"); return }
            guard case .ended = try await s.a.requestStop("rec-w", grace: ClusterStoreTests.grace) else { Issue.record("stopped twice"); return }
            #expect(try await s.a.claim(session: 1, grace: ClusterStoreTests.grace) == nil)
            #expect(try await s.t.sql("SELECT string_agg(key || ':' || (args->>'type'), ',') FROM tasks") == "rec-w.finished:job.finished")

            let receiver = try await s.receiver()
            #expect(try await Self.deliver(try s.delivery(s.a), session: 1) { !s.deliveries().isEmpty })
            try await s.delivery(s.b).round(session: 2)
            let got = s.deliveries()
            #expect(got.count == 1, "\(got.map(\.id))")
            #expect(got.first?.type == "job.finished" && got.first?.data["job"] as? String == "rec-w")
            #expect((got.first?.data["files"] as? [Any])?.isEmpty == true, "it recorded nothing")
            await receiver.stop()
        }
    }
}
