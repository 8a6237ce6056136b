import Bot
@testable import Service
import Foundation
import Logging
import PostgresNIO
import Spool
import Testing
import TestSupport

/// `ClusterStore`'s transitions against the real PostgreSQL (`LocalPostgres`), with two store
/// values under different instance names and rows back-dated instead of waiting: no Janus, no
/// media, no serve process. Each scenario has a database of its own on the test process's one
/// server (`SharedPostgres`).
@Suite(.serialized) struct ClusterStoreTests {
    /// Two instances' stores on one database, and the server's view through psql.
    struct Two {
        let a: ClusterStore, b: ClusterStore
        let pg: LocalPostgres
        let database: String
        let running: [Task<Void, Never>]

        func sql(_ text: String) async throws -> String { try await pg.psql(text, database: database) }
        func state(_ id: String) async throws -> String { try await sql("SELECT state FROM jobs WHERE id = '\(id)'") }
        func close() { running.forEach { $0.cancel() } }
    }

    static let spec = try! JSONDecoder().decode(JobSpec.self, from: Data(#"{"kind": "recording", "room": 1234, "key": {"none": true}, "loop": false}"#.utf8))
    /// Long lease and grace: what must run out is back-dated in the rows, so a machine slow
    /// enough to take seconds between two statements (the lanes' first run: 53 s for one test)
    /// never lets one run out by itself.
    static let grace = Duration.seconds(30)

    /// A fresh database on `pg` named after `prefix`, migrated, with a live session of each
    /// instance (`instance_sessions` keys 1 for a, 2 for b).
    static func two(_ pg: LocalPostgres, _ prefix: String) async throws -> Two {
        let name = "\(prefix)_\(UUID().uuidString.prefix(8).lowercased())"
        _ = try await pg.psql("CREATE DATABASE \(name)")
        var log = Logger(label: "test.cluster-store")
        log.logLevel = .warning
        func store(_ instance: String) -> (ClusterStore, Task<Void, Never>) {
            let config = PostgresClient.Configuration(host: "127.0.0.1", port: pg.port, username: "sfubot", password: nil, database: name, tls: .disable)
            let client = PostgresClient(configuration: config, backgroundLogger: log)
            let session = PostgresConnection.Configuration(host: "127.0.0.1", port: pg.port, username: "sfubot", password: nil, database: name, tls: .disable)
            return (ClusterStore(client: client, instance: instance, lease: .seconds(60), log: log, session: session), Task { await client.run() })
        }
        let (a, ra) = store("a"), (b, rb) = store("b")
        _ = try await ClusterMigrations.run(a.client, logger: log)
        let two = Two(a: a, b: b, pg: pg, database: name, running: [ra, rb])
        _ = try await two.sql("INSERT INTO instance_sessions (key, instance) VALUES (1, 'a'), (2, 'b')")
        return two
    }

    /// The process's shared server (`SharedPostgres`): each test makes a database of its own on it.
    static func withServer(_ body: (LocalPostgres) async throws -> Void) async throws {
        try await body(try await SharedPostgres.get())
    }

    @Test("claim, renew, the lease run out → taken over by the other, the session gone → taken over before the lease, release → claimed again")
    func claimRenewTakeOver() async throws {
        try await Self.withServer { pg in
            let t = try await Self.two(pg, "takeover")
            defer { t.close() }
            try await t.a.insert(id: "rec-1", spec: Self.spec, created: Date())
            let first = try #require(try await t.a.claim(session: 1, grace: Self.grace))
            #expect(first.row.id == "rec-1" && first.previous == nil && first.row.state == .running)
            #expect(try await t.state("rec-1") == "running")
            #expect(try await t.b.claim(session: 2, grace: Self.grace) == nil, "held under a live lease")
            #expect(try await t.a.renew(["rec-1"]) == (kept: ["rec-1"], stopAsked: []))
            #expect(try await t.b.renew(["rec-1"]).kept.isEmpty, "b does not hold it")

            // a's lease ran out (back-dated): b takes it, a's renewal finds it gone.
            _ = try await t.sql("UPDATE jobs SET lease_until = now() - interval '10 ms' WHERE id = 'rec-1'")
            let taken = try #require(try await t.b.claim(session: 2, grace: Self.grace))
            #expect(taken.previous == "a" && taken.expired && taken.row.resumes == 1)
            #expect(try await t.a.renew(["rec-1"]).kept.isEmpty)
            #expect(try await t.sql("SELECT string_agg(owner || ':' || cause || ':' || coalesce(end_cause, '-'), ',' ORDER BY seq) FROM job_owners")
                    == "a:new:lease expired,b:failover:-")

            // b's session seen gone, its lease still live: taken once the grace has passed, not before.
            _ = try await t.sql("UPDATE instance_sessions SET gone_since = now() - interval '1 s' WHERE key = 2")
            #expect(try await t.a.claim(session: 1, grace: Self.grace) == nil, "gone 1 s, grace 30 s")
            _ = try await t.sql("UPDATE instance_sessions SET gone_since = now() - interval '31 s' WHERE key = 2")
            let back = try #require(try await t.a.claim(session: 1, grace: Self.grace))
            #expect(back.previous == "b" && !back.expired && back.row.resumes == 2)

            // Paused by its owner, released at shutdown: queued, and claimed paused.
            #expect(try await t.b.setPaused("rec-1", true) == .refused("it runs on a: the owner applies it"))
            // As the owner's publish leaves it (the status the next owner reads).
            _ = try await t.sql("UPDATE jobs SET status = jsonb_build_object('paused', true) WHERE id = 'rec-1'")
            guard case .apply = try await t.a.setPaused("rec-1", true) else { Issue.record("pause not applied"); return }
            #expect(try await t.state("rec-1") == "paused")
            try await t.a.release(["rec-1"])
            #expect(try await t.sql("SELECT state || ':' || coalesce(owner, '-') FROM jobs") == "queued:-")
            let again = try #require(try await t.b.claim(session: 2, grace: Self.grace))
            #expect(again.previous == nil && again.row.state == .paused && again.row.resumes == 3, "\(again.row.state)")
        }
    }

    @Test("stop: passed to a live owner (stopping, its renewal says so), settled when nobody writes it; end by the owner only; uploading until the merged manifest")
    func stopAndEnd() async throws {
        try await Self.withServer { pg in
            let t = try await Self.two(pg, "stopend")
            defer { t.close() }
            // Waiting: a DELETE ends it at once, by whoever is asked.
            try await t.a.insert(id: "rec-q", spec: Self.spec, created: Date())
            guard case .settled = try await t.b.requestStop("rec-q", grace: Self.grace) else { Issue.record("not settled"); return }
            #expect(try await t.sql("SELECT state || ':' || final_state || ':' || (ended IS NOT NULL) FROM jobs WHERE id = 'rec-q'") == "done:done:true")
            guard case .ended = try await t.b.requestStop("rec-q", grace: Self.grace) else { Issue.record("a second stop changed it"); return }
            guard case .noSuchJob = try await t.b.requestStop("rec-none", grace: Self.grace) else { Issue.record("no such job"); return }

            // Running on a: b passes the stop on; a's renewal carries it; a ends it, b cannot.
            try await t.a.insert(id: "rec-1", spec: Self.spec, created: Date().addingTimeInterval(1))
            _ = try #require(try await t.a.claim(session: 1, grace: Self.grace))
            guard case .owner("a") = try await t.b.requestStop("rec-1", grace: Self.grace) else { Issue.record("not passed to a"); return }
            #expect(try await t.state("rec-1") == "stopping")
            #expect(try await t.a.renew(["rec-1"]).stopAsked == ["rec-1"])
            let outcome = Job.Outcome(state: .done, ended: Date(), error: nil)
            #expect(try await t.b.end("rec-1", outcome, status: nil) == .refused("it is no longer this instance's: its next owner writes its end"))
            guard case .apply(let end) = try await t.a.end("rec-1", outcome, status: nil), end.to == .done else { Issue.record("a's end"); return }
            #expect(try await t.sql("SELECT state || ':' || coalesce(lease_until::text, '-') FROM jobs WHERE id = 'rec-1'") == "done:-")
            // Its answer lost, a tries again: nothing changes.
            #expect(try await t.a.end("rec-1", outcome, status: nil, retry: true) == .unchanged)
            #expect(try await t.sql("SELECT end_cause FROM job_owners WHERE job_id = 'rec-1'") == "finished")

            // Stopping, then its owner shut down (released) or died (lease back-dated): the next claim settles it.
            for (id, how) in [("rec-2", "release"), ("rec-3", "expire")] {
                try await t.a.insert(id: id, spec: Self.spec, created: Date().addingTimeInterval(2))
                _ = try #require(try await t.a.claim(session: 1, grace: Self.grace))
                guard case .owner = try await t.b.requestStop(id, grace: Self.grace) else { Issue.record("\(id) not passed on"); return }
                if how == "release" {
                    try await t.a.release([id])
                    #expect(try await t.sql("SELECT state || ':' || coalesce(owner, '-') FROM jobs WHERE id = '\(id)'") == "stopping:-")
                } else {
                    _ = try await t.sql("UPDATE jobs SET lease_until = now() - interval '10 ms' WHERE id = '\(id)'")
                }
                #expect(try await t.b.claim(session: 2, grace: Self.grace) == nil, "\(id): settled, not taken")
                #expect(try await t.state(id) == "done", "\(id) after \(how)")
            }

            // A recording with a folder: ended into uploading; its uploads finish it (failed stays failed).
            try await t.a.insert(id: "rec-4", spec: Self.spec, created: Date().addingTimeInterval(3))
            _ = try #require(try await t.a.claim(session: 1, grace: Self.grace))
            try await t.a.setFolder(job: "rec-4", folderID: "f-a")
            _ = try await t.a.end("rec-4", .init(state: .failed, ended: Date(), error: "it broke"), status: nil)
            #expect(try await t.state("rec-4") == "uploading")
            #expect(try await t.b.stalledUploads().isEmpty, "no folder queued yet")
            #expect(try await t.a.queueFolder(job: "rec-4", folderID: "f-a", folder: "/x", prefix: "", manifest: nil, rows: []))
            #expect(try await t.b.stalledUploads() == ["rec-4"])
            guard case .merge = try await t.b.nextStep(job: "rec-4", mergedKey: "rec/rec-4/recording.json") else { Issue.record("merge first"); return }
            _ = try await t.a.nextStep(job: "rec-4", mergedKey: "rec/rec-4/recording.json")
            #expect(try await t.sql("SELECT string_agg(kind || ':' || key || ':' || state, ' ') FROM tasks") == "merged:rec-4:available",
                    "one merged manifest task, queued with the step that made it due, whoever looks")
            let merge = try #require(try await t.a.claim([.merged], session: 1, limit: 4).first)
            #expect(merge.job == "rec-4")
            #expect(try await t.a.finish(merge, .done, cancelled: false) == .complete)
            _ = try await t.sql("""
                INSERT INTO tasks (kind, key, job_id, args, state, queued_by, finished)
                VALUES ('upload', 'rec/rec-4/recording.json', 'rec-4', '{"name": "recording.json"}', 'completed', 'b', now())
                """)
            guard case .finished(let done) = try await t.b.nextStep(job: "rec-4", mergedKey: "rec/rec-4/recording.json"), done.failedJob else {
                Issue.record("finished, as failed"); return
            }
            #expect(try await t.sql("SELECT state || ':' || (uploads_finished IS NOT NULL) FROM jobs WHERE id = 'rec-4'") == "failed:true")
            guard case .wait = try await t.a.nextStep(job: "rec-4", mergedKey: "rec/rec-4/recording.json") else { Issue.record("finished twice"); return }

            // The constraints hold whatever writes: a running row with no lease is refused.
            await #expect(throws: (any Error).self) { try await t.sql("UPDATE jobs SET lease_until = NULL WHERE id = 'rec-4'; UPDATE jobs SET state = 'running' WHERE id = 'rec-4'") }
        }
    }

    @Test("step 6 names the state of rows written before it, as the columns said it")
    func backfill() async throws {
        try await Self.withServer { pg in
            let old = try await SharedPostgres.database("old").name
            for step in ClusterMigrations.steps where step.version <= 5 {
                for sql in step.sql { _ = try await pg.psql(sql, database: old) }
            }
            _ = try await pg.psql("""
                CREATE TABLE schema_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now());
                INSERT INTO schema_migrations (version) VALUES (1), (2), (3), (4), (5);
                INSERT INTO jobs (id, kind, spec, created, owner, lease_until, stop_requested, final_state, ended, status, uploads_finished) VALUES
                    ('waiting', 'recording', '{}', now(), NULL, NULL, false, NULL, NULL, NULL, NULL),
                    ('running', 'recording', '{}', now(), 'a', now() + interval '60 s', false, NULL, NULL, '{"paused": false}', NULL),
                    ('paused', 'recording', '{}', now(), 'a', now() - interval '1 s', false, NULL, NULL, '{"paused": true}', NULL),
                    ('stopping', 'recording', '{}', now(), 'a', now() + interval '60 s', true, NULL, NULL, NULL, NULL),
                    ('stopped-free', 'recording', '{}', now(), NULL, NULL, true, NULL, NULL, NULL, NULL),
                    ('uploading', 'recording', '{}', now(), 'a', NULL, false, 'failed', now(), NULL, NULL),
                    ('uploaded', 'recording', '{}', now(), 'a', NULL, false, 'done', now(), NULL, now()),
                    ('failed', 'playback', '{}', now(), 'a', NULL, true, 'failed', NULL, NULL, NULL);
                INSERT INTO job_owners (job_id, seq, owner, cause, started, folder_id) VALUES
                    ('uploading', 1, 'a', 'new', now(), 'f'), ('uploaded', 1, 'a', 'new', now(), 'f')
                """, database: old)
            var log = Logger(label: "test.cluster-store")
            log.logLevel = .warning
            let client = PostgresClient(configuration: .init(host: "127.0.0.1", port: pg.port, username: "sfubot", password: nil, database: old, tls: .disable),
                                        backgroundLogger: log)
            let running = Task { await client.run() }
            defer { running.cancel() }
            let applied = try await ClusterMigrations.run(client, logger: log)
            #expect(applied == ClusterMigrations.steps.map(\.version).filter { $0 >= 6 }, "step 6 and every one after it")
            let states = try await pg.psql("SELECT string_agg(id || '=' || state, ' ' ORDER BY id) FROM jobs", database: old)
            #expect(states == "failed=failed paused=paused running=running stopped-free=stopping stopping=stopping uploaded=done uploading=uploading waiting=queued")
            #expect(try await pg.psql("SELECT ended IS NOT NULL FROM jobs WHERE id = 'failed'", database: old) == "t", "an ended row says when")
        }
    }

    @Test("a GET while the database cannot be read never shows a job this instance stopped writing as ended (issue 44)")
    func unreachableShowsNoEnd() {
        let job = Job(id: "rec-1", spec: Self.spec, created: Date(), resumes: 0, live: LiveStatus(), sent: nil)
        // Fenced: its run here ended (the fence stopped it), the job goes on elsewhere.
        job.settle(.init(state: .done, ended: Date(), error: nil))
        let shown = JobManager.shownUnreachable(job, fenced: true, instance: "a")
        #expect(shown.state == "reconnecting" && shown.ended == nil, "\(shown.state) \(String(describing: shown.ended))")
        let own = JobManager.shownUnreachable(job, fenced: false, instance: "a")
        #expect(own.state == "done" && own.ended != nil, "an end it wrote itself is shown")
    }

    @Test("admission: a job is queued while the live instances' --max-jobs leave room together, refused (Full) past it; a gone instance's room is not counted (issue 44 item 3)")
    func admission() async throws {
        try await Self.withServer { pg in
            let t = try await Self.two(pg, "admission")
            defer { t.close() }
            _ = try await t.sql("UPDATE instance_sessions SET max_jobs = 1")
            try await t.a.insert(id: "rec-1", spec: Self.spec, created: Date())
            try await t.b.insert(id: "rec-2", spec: Self.spec, created: Date())
            #expect(try await t.a.waiting() == 2)
            await #expect(throws: ClusterStore.Full.self) { try await t.b.insert(id: "rec-3", spec: Self.spec, created: Date()) }
            // One ends: room for one more.
            _ = try #require(try await t.a.claim(session: 1, grace: Self.grace))
            _ = try await t.a.end("rec-1", .init(state: .done, ended: Date(), error: nil), status: nil)
            try await t.b.insert(id: "rec-3", spec: Self.spec, created: Date())
            // b's session gone: its room is no longer there; a second live session of a counts once.
            _ = try await t.sql("UPDATE instance_sessions SET gone_since = now() WHERE key = 2; INSERT INTO instance_sessions (key, instance, max_jobs) VALUES (3, 'a', 1)")
            await #expect(throws: ClusterStore.Full.self) { try await t.a.insert(id: "rec-4", spec: Self.spec, created: Date()) }
            #expect(try await t.sql("SELECT count(*) FROM jobs") == "3")
            // A folder another active job records into is still told apart (the API's 409).
            _ = try await t.sql("UPDATE instance_sessions SET max_jobs = 10")
            var spec = Self.spec
            spec.out = "/rec/one"
            try await t.a.insert(id: "rec-5", spec: spec, created: Date())
            do {
                try await t.a.insert(id: "rec-6", spec: spec, created: Date())
                Issue.record("two active recordings into one folder")
            } catch let e as PSQLError {
                #expect(e.serverInfo?[.sqlState] == "23505")
            }
        }
    }
}
