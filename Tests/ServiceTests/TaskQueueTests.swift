import Foundation
import Logging
import PostgresNIO
@testable import Service
import Spool
import Testing
import TestSupport

/// The cluster's task queue (`tasks`) against the real PostgreSQL: two instances' stores
/// (`ClusterStoreTests.two`, sessions 1 and 2), times back-dated in the rows instead of waited.
@Suite(.serialized) struct TaskQueueTests {
    static func webhook(_ key: String, job: String? = "rec-1", pinned: String? = nil) -> NewTask {
        NewTask(kind: .webhook, key: key, job: job, ordered: job != nil, pinnedTo: pinned, args: ["type": "job.started"], payload: #"{"n":1}"#)
    }

    @Test("enqueue: in the transaction that causes it (a rollback queues nothing), once per key, in order per job; claim skips what another holds and what is pinned to another")
    func enqueueAndClaim() async throws {
        try await ClusterStoreTests.withServer { pg in
            let t = try await ClusterStoreTests.two(pg, "tasks_claim")
            defer { t.close() }
            struct Rollback: Error {}
            await #expect(throws: PostgresTransactionError.self) {
                try await t.a.client.withTransaction(logger: t.a.log) { connection in
                    #expect(try await t.a.enqueue(Self.webhook("rolled-back"), connection))
                    throw Rollback()
                }
            }
            #expect(try await t.sql("SELECT count(*) FROM tasks") == "0")
            #expect(try await t.a.enqueue(Self.webhook("rec-1.started.0")))
            #expect(try await !t.b.enqueue(Self.webhook("rec-1.started.0")), "one per key, whoever queues it")
            #expect(try await t.a.enqueue(Self.webhook("rec-1.paused.1")))
            #expect(try await t.a.enqueue(Self.webhook("rec-2.started.0", job: "rec-2")))
            #expect(try await t.a.enqueue(Self.webhook("pinned-to-a", job: nil, pinned: "a")))
            #expect(try await t.sql("SELECT string_agg(key || ':' || coalesce(seq::text, '-') || ':' || state, ' ' ORDER BY id) FROM tasks")
                    == "rec-1.started.0:1:available rec-1.paused.1:2:available rec-2.started.0:1:available pinned-to-a:-:available")

            // b claims what is due and its own to take: each job's first, not a's pinned one.
            let byB = try await t.b.claim([.webhook], session: 2, limit: 16)
            #expect(byB.map(\.key) == ["rec-1.started.0", "rec-2.started.0"])
            #expect(byB.first?.payload == #"{"n":1}"# && byB.first?.args == ["type": "job.started"])
            #expect(try await t.b.claim([.webhook], session: 2, limit: 16).isEmpty, "rec-1's next waits; the pinned one is a's")
            #expect(try await t.a.claim([.webhook], session: 1, limit: 16).map(\.key) == ["pinned-to-a"])
            #expect(try await t.sql("SELECT string_agg(key || ':' || claimed_by, ' ' ORDER BY id) FROM tasks WHERE state = 'running'")
                    == "rec-1.started.0:b rec-2.started.0:b pinned-to-a:a")

            // rec-1's first done: its next is due.
            #expect(try await t.b.finish(byB[0], .done, cancelled: false) == .complete)
            #expect(try await t.a.claim([.webhook], session: 1, limit: 16).map(\.key) == ["rec-1.paused.1"])
            #expect(try await t.sql("SELECT state || ':' || attempts || ':' || (finished IS NOT NULL) FROM tasks WHERE key = 'rec-1.started.0'") == "completed:1:true")
            // The CHECK constraints refuse a running task without its claim, a finished one without its time.
            await #expect(throws: (any Error).self) { try await t.sql("UPDATE tasks SET claimed_by = NULL WHERE state = 'running'") }
            await #expect(throws: (any Error).self) { try await t.sql("UPDATE tasks SET finished = NULL WHERE state = 'completed'") }
        }
    }

    @Test("a failed try backs off (run_at, attempts, last error) and is claimed again once due; the claimer alone writes it; one past its day is discarded")
    func failAndRetry() async throws {
        try await ClusterStoreTests.withServer { pg in
            let t = try await ClusterStoreTests.two(pg, "tasks_retry")
            defer { t.close() }
            try await t.a.enqueue(Self.webhook("rec-1.started.0"))
            let task = try #require(try await t.a.claim([.webhook], session: 1, limit: 1).first)
            #expect(try await t.b.finish(task, .retry("not b's"), cancelled: false) == nil, "b holds no claim on it")
            guard case .retry(1, "the receiver answered 503") = try await t.a.finish(task, .retry("the receiver answered 503"), cancelled: false) else {
                Issue.record("not retried"); return
            }
            // 5 s × 0.75–1 from now.
            let wait = try await t.sql("SELECT extract(epoch FROM run_at - now()) FROM tasks")
            #expect((3.5...5.1).contains(Double(wait) ?? 0), "\(wait)")
            #expect(try await t.sql("SELECT state || ':' || attempts || ':' || last_error || ':' || (claimed_by IS NULL) FROM tasks")
                    == "available:1:the receiver answered 503:true")
            #expect(try await t.b.claim([.webhook], session: 2, limit: 1).isEmpty, "not due yet")
            _ = try await t.sql("UPDATE tasks SET run_at = now()")
            let again = try #require(try await t.b.claim([.webhook], session: 2, limit: 1).first)
            #expect(again.attempts == 1)

            // Queued two days ago: its next failure gives it up.
            _ = try await t.sql("UPDATE tasks SET created = now() - interval '2 days'")
            #expect(try await t.b.finish(again, .retry("down"), cancelled: false) == .discard(attempts: 2, why: "down", expired: true))
            #expect(try await t.sql("SELECT state || ':' || (finished IS NOT NULL) FROM tasks") == "discarded:true")
            #expect(try await t.a.depth(.webhook) == 0)

            // A shutdown's cut-short try: free at once, not counted.
            try await t.a.enqueue(Self.webhook("rec-2.started.0", job: "rec-2"))
            let cut = try #require(try await t.a.claim([.webhook], session: 1, limit: 1).first)
            #expect(try await t.a.depth(.webhook) == 1)
            #expect(try await t.a.finish(cut, .retry("cancelled"), cancelled: true) == .release)
            #expect(try await t.sql("SELECT state || ':' || attempts FROM tasks WHERE key = 'rec-2.started.0'") == "available:0")
        }
    }

    @Test("the rescuer: a claim held is kept; one run out or whose claimer's session is gone is available again (the claimer's late answer then refused); past its day, discarded")
    func rescue() async throws {
        try await ClusterStoreTests.withServer { pg in
            let t = try await ClusterStoreTests.two(pg, "tasks_rescue")
            defer { t.close() }
            for key in ["t-1", "t-2", "t-3"] { try await t.a.enqueue(Self.webhook(key, job: nil)) }
            let held = try await t.a.claim([.webhook], session: 1, limit: 16)
            #expect(held.count == 3)
            #expect(try await t.b.rescue().isEmpty, "a's claims hold")

            // t-1's claim ran out (a hangs); t-3 is two days old and its claim ran out too.
            _ = try await t.sql("UPDATE tasks SET claim_until = now() - interval '1 ms' WHERE key IN ('t-1', 't-3')")
            _ = try await t.sql("UPDATE tasks SET created = now() - interval '2 days' WHERE key = 't-3'")
            let rescued = try await t.b.rescue()
            #expect(rescued.map(\.task.key) == ["t-1", "t-3"])
            #expect(rescued.map(\.decision) == [.release, .discard(attempts: 0, why: "given up: its claimer went away after its time ran out", expired: true)])
            #expect(try await t.b.claim([.webhook], session: 2, limit: 16).map(\.key) == ["t-1"])
            #expect(try await t.a.finish(held[0], .retry("late"), cancelled: false) == nil, "no longer a's")

            // a's session gone: t-2 is free at once, its claim still running.
            _ = try await t.sql("UPDATE instance_sessions SET gone_since = now() WHERE key = 1")
            #expect(try await t.b.rescue().map(\.task.key) == ["t-2"])
            #expect(try await t.sql("SELECT string_agg(key || ':' || state || ':' || coalesce(claimed_by, '-'), ' ' ORDER BY id) FROM tasks")
                    == "t-1:running:b t-2:available:- t-3:discarded:-")
        }
    }

    @Test("step 11 moves the webhook outbox's rows onto tasks: delivered ones completed, given-up ones discarded, claimed ones available again, a job's order and each body kept")
    func webhookRowsMoved() async throws {
        try await ClusterStoreTests.withServer { pg in
            let old = try await SharedPostgres.database("old").name
            _ = try await pg.psql("CREATE TABLE schema_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())", database: old)
            for step in ClusterMigrations.steps where step.version <= 10 {
                for sql in step.sql { _ = try await pg.psql(sql, database: old) }
                _ = try await pg.psql("INSERT INTO schema_migrations (version) VALUES (\(step.version))", database: old)
            }
            _ = try await pg.psql("""
                INSERT INTO webhook_events (event_id, job_id, seq, type, body, queued_by, attempts, delivered, gave_up, claimed_by, claim_until) VALUES
                    ('rec-1.started.0', 'rec-1', 1, 'job.started', '{"a": 1}', 'a', 1, now(), NULL, NULL, NULL),
                    ('rec-1.paused.1', 'rec-1', 2, 'job.paused', '{"b":  2}', 'a', 3, NULL, NULL, 'b', now() + interval '60 s'),
                    ('rec-1.resumed.1', 'rec-1', 3, 'job.resumed', '{}', 'a', 0, NULL, NULL, NULL, NULL),
                    ('rec-2.started.0', 'rec-2', 1, 'job.started', '{}', 'b', 9, NULL, now(), NULL, NULL),
                    ('lone', NULL, 1, 'upload.failed', '{}', 'b', 0, NULL, NULL, NULL, NULL)
                """, database: old)
            var log = Logger(label: "test.tasks")
            log.logLevel = .warning
            let client = PostgresClient(configuration: .init(host: "127.0.0.1", port: pg.port, username: "sfubot", password: nil, database: old, tls: .disable),
                                        backgroundLogger: log)
            let running = Task { await client.run() }
            defer { running.cancel() }
            #expect(try await ClusterMigrations.run(client, logger: log) == ClusterMigrations.steps.map(\.version).filter { $0 >= 11 })
            let rows = try await pg.psql("""
                SELECT string_agg(key || ':' || coalesce(seq::text, '-') || ':' || state || ':' || attempts || ':' || (args->>'type') || ':' || payload, ' ' ORDER BY id) FROM tasks
                """, database: old)
            #expect(rows == #"rec-1.started.0:1:completed:1:job.started:{"a": 1} rec-1.paused.1:2:available:3:job.paused:{"b":  2} "#
                    + "rec-1.resumed.1:3:available:0:job.resumed:{} rec-2.started.0:1:discarded:9:job.started:{} lone:-:available:0:upload.failed:{}")
            #expect(try await pg.psql("SELECT to_regclass('webhook_events') IS NULL", database: old) == "t")
        }
    }
}
