import Crypto
import Foundation
import Logging
import ObjectStore
import PostgresNIO
@testable import Service
import Spool
import Testing
import TestSupport
import Webhooks

/// A recording's uploads as tasks of kind `upload` (issue 41 item 4) at the store's level: two
/// store values under different instance names on the real PostgreSQL (`ClusterStoreTests.two`),
/// rows back-dated instead of waiting, the object store moto or a port nobody listens on; no
/// Janus, no serve process. The guarantees are issue 27's: a failed upload never loses a file,
/// the local file is deleted only after its object is verified, tries back off and survive
/// restarts, `upload.failed` once per count; and a file is uploaded only from the disk holding it.
@Suite(.serialized) struct UploadTaskTests {
    static let credentials = S3Credentials(accessKeyID: "AKIDTASKS", secretAccessKey: "tasks-secret")

    static func storage(_ port: Int) throws -> S3Client {
        S3Client(location: try S3Location(storage: "s3://sfubot-tasks/rec", endpoint: "http://127.0.0.1:\(port)", environment: [:]), credentials: credentials)
    }

    /// `t.a`'s publishing with `storage`, its worker working uploads and merged manifests.
    static func worker(_ t: ClusterStoreTests.Two, _ store: ClusterStore, storage: S3Client, dir: URL) throws -> (JobPublishing, TaskWorker) {
        var log = Logger(label: "test.upload-tasks")
        log.logLevel = .warning
        let publishing = try JobPublishing(stateDirectory: dir.appendingPathComponent("state-\(store.instance)"), storage: storage, webhook: nil, logger: log)
        publishing.use(store)
        var worker = TaskWorker(queue: store, webhooks: nil)
        worker.upload = { task in await publishing.uploadTask(task) }
        worker.merge = { job in await publishing.mergeTask(job) }
        return (publishing, worker)
    }

    /// A recording `id` of `t.a`, ended (uploading), its folder `f-a` noted.
    static func endedRecording(_ t: ClusterStoreTests.Two, _ id: String) async throws {
        try await t.a.insert(id: id, spec: ClusterStoreTests.spec, created: Date())
        _ = try #require(try await t.a.claim(session: 1, grace: ClusterStoreTests.grace))
        try await t.a.setFolder(job: id, folderID: "f-a")
        _ = try await t.a.end(id, .init(state: .done, ended: Date(), error: nil), status: nil)
        #expect(try await t.state(id) == "uploading")
    }

    /// The folders a takeover asked about.
    actor Asked {
        var folders: [String] = []
        func add(_ folder: String) { folders.append(folder) }
    }

    static func file(_ dir: URL, _ name: String, bytes: Int) throws -> String {
        let url = dir.appendingPathComponent(name)
        try Data((0..<bytes).map { UInt8(truncatingIfNeeded: $0 &* 31) }).write(to: url)
        return url.path
    }

    @Test("an upload task is claimed only by the instance it is pinned to; the rescuer frees a dead claimer's at once, still pinned; a dead instance's tasks are re-pinned only where its folder is reachable, after the grace")
    func pinned() async throws {
        try await ClusterStoreTests.withServer { pg in
            let t = try await ClusterStoreTests.two(pg, "pinned")
            defer { t.close() }
            try await Self.endedRecording(t, "rec-1")
            let rows = ["x.mka", "y.mka"].map { ClusterStore.UploadRow(job: "rec-1", key: "rec/rec-1/\($0)", name: $0, file: "/shared/rec-1/\($0)", folderID: "f-a", size: 1, sha256: "00") }
            #expect(try await t.a.queueFolder(job: "rec-1", folderID: "f-a", folder: "/shared/rec-1", prefix: "", manifest: nil, rows: rows))
            #expect(try await !t.b.queueFolder(job: "rec-1", folderID: "f-a", folder: "/shared/rec-1", prefix: "", manifest: nil, rows: rows), "a folder is queued once")
            #expect(try await t.sql("SELECT string_agg(pinned_to || ':' || state, ' ' ORDER BY key) FROM tasks WHERE kind = 'upload'") == "a:available a:available")
            #expect(try await t.b.claim([.upload], session: 2, limit: 4).isEmpty, "pinned to a")
            let held = try #require(try await t.a.claim([.upload], session: 1, limit: 1).first)
            #expect(try await t.sql("SELECT claim_until > now() + interval '30 min' FROM tasks WHERE id = \(held.id)") == "t", "an upload's claim outlasts a big file")

            // a dies: its claim is freed at once, but the task stays a's (its disk).
            _ = try await t.sql("UPDATE instance_sessions SET gone_since = now() WHERE key = 1")
            #expect(try await t.b.rescue().map(\.decision) == [.release])
            #expect(try await t.b.claim([.upload], session: 2, limit: 4).isEmpty)
            let never: @Sendable (String, String) async -> Bool = { _, _ in Issue.record("asked before the grace"); return false }
            #expect(try await t.b.takeUploads(grace: ClusterStoreTests.grace, reachable: never).isEmpty, "gone for less than the grace")
            _ = try await t.sql("UPDATE instance_sessions SET gone_since = now() - interval '1 hour' WHERE key = 1")
            let asked = Asked()
            #expect(try await t.b.takeUploads(grace: ClusterStoreTests.grace) { folder, id in await asked.add("\(folder)#\(id)"); return false }.isEmpty,
                    "its own disk: the same path here is another folder")
            #expect(await asked.folders == ["/shared/rec-1#f-a"], "asked once per folder")
            let taken = try await t.b.takeUploads(grace: ClusterStoreTests.grace) { _, _ in true }
            #expect(taken.map(\.from) == ["a", "a"] && taken.allSatisfy { $0.job == "rec-1" })
            #expect(try await t.sql("SELECT string_agg(pinned_to, ',') FROM tasks WHERE kind = 'upload'") == "b,b")
            #expect(try await t.a.claim([.upload], session: 1, limit: 4).isEmpty, "b's now")
            #expect(try await t.b.claim([.upload], session: 2, limit: 4).count == 2)
            let shown = try #require(try await t.a.uploads(of: "rec-1"))
            #expect(shown.pending == 2 && shown.uploaded == 0 && shown.finished == false)
            // Taken over from shared storage: an operator's abandon of the dead uploader gives up nothing.
            #expect(try await t.b.abandon(job: "rec-1", owner: "a", reason: "test", grace: ClusterStoreTests.grace)
                    == .refused("nothing of a's waits: no folder of it unqueued, no file of it pending"))
        }
    }

    @Test("a failed try keeps its file and its task (backoff, counted), upload.failed on the first try and the eleventh, queued once whoever tries; a vanished file is given up as missing; a verified object is only deleted and settled; then the merged manifest is queued")
    func failures() async throws {
        try await ClusterStoreTests.withServer { pg in
            var t = try await ClusterStoreTests.two(pg, "failures")
            defer { t.close() }
            let dir = try Scene.tempDirectory("upload-tasks")
            defer { try? FileManager.default.removeItem(at: dir) }
            var a = t.a
            a.webhooks = true
            t = ClusterStoreTests.Two(a: a, b: t.b, pg: t.pg, database: t.database, running: t.running)
            try await Self.endedRecording(t, "rec-2")
            let kept = try Self.file(dir, "kept.mka", bytes: 1000)
            let rows = [ClusterStore.UploadRow(job: "rec-2", key: "rec/rec-2/kept.mka", name: "kept.mka", file: kept, folderID: "f-a"),
                        ClusterStore.UploadRow(job: "rec-2", key: "rec/rec-2/gone.mka", name: "gone.mka", file: dir.appendingPathComponent("gone.mka").path, folderID: "f-a")]
            #expect(try await a.queueFolder(job: "rec-2", folderID: "f-a", folder: dir.path, prefix: "", manifest: nil, rows: rows))
            // Nobody listens there: every upload fails as a store down would.
            let (_, worker) = try Self.worker(t, a, storage: try Self.storage(18691), dir: dir)
            func upload(_ name: String) async throws -> String {
                try await t.sql("SELECT state || ':' || attempts || ':' || (run_at > now()) FROM tasks WHERE key = 'rec/rec-2/\(name)'")
            }
            #expect(try await worker.round(session: 1) == 1, "one upload a round")
            #expect(try await worker.round(session: 1) == 1)
            #expect(try await upload("kept.mka") == "available:1:true", "retried later, counted")
            #expect(try await upload("gone.mka") == "discarded:1:false", "its file gone: given up")
            #expect(FileManager.default.fileExists(atPath: kept), "a failed upload never loses a file")
            let failed = "upload-\(LocalTaskQueue.fileID(key: "rec/rec-2/kept.mka")).failed"
            #expect(try await t.sql("SELECT string_agg(key, ' ' ORDER BY key) FROM tasks WHERE kind = 'webhook' AND key LIKE '\(failed)%'") == "\(failed).0")
            // b tells the same try's failure (with its own body): queued once.
            let again = try #require(JobPublishing.uploadFailedEvent(job: "rec-2", file: "/disk-b/kept.mka", key: "rec/rec-2/kept.mka", "b", attempts: 1))
            var b = t.b
            b.webhooks = true
            #expect(try await !b.enqueue(again, job: "rec-2"))
            // Tries 2 to 10 tell nothing; the eleventh does.
            for n in 2...11 {
                _ = try await t.sql("UPDATE tasks SET run_at = now() WHERE key = 'rec/rec-2/kept.mka'")
                #expect(try await worker.round(session: 1) == 1)
                #expect(try await upload("kept.mka") == "available:\(n):true")
            }
            #expect(try await t.sql("SELECT string_agg(key, ' ' ORDER BY key) FROM tasks WHERE kind = 'webhook' AND key LIKE '\(failed)%'")
                    == "\(failed).0 \(failed).10")
            // Shown alike by the other instance (GET's uploads on either).
            let shown = try #require(try await t.b.uploads(of: "rec-2"))
            #expect(shown.pending == 1 && shown.missing == 1 && shown.failedTries == 12 && shown.lastError?.contains("cannot reach") == true, "\(shown)")

            // Verified before a crash (its object in the task, its file still here): the next
            // try sends nothing (the store is still away), deletes the file and settles.
            let json = #"{"key": "rec/rec-2/kept.mka", "url": "http://127.0.0.1:18691/sfubot-tasks/rec/rec-2/kept.mka", "size": 1000, "sha256": "ab", "etag": "cd", "parts": 1}"#
            _ = try await t.sql("UPDATE tasks SET run_at = now(), args = args || jsonb_build_object('object', '\(json)'::text) WHERE key = 'rec/rec-2/kept.mka'")
            #expect(try await worker.round(session: 1) == 1)
            #expect(try await upload("kept.mka") == "completed:12:false")
            #expect(!FileManager.default.fileExists(atPath: kept), "deleted once its object is known")
            #expect(try await t.sql("SELECT string_agg(kind || ':' || key || ':' || state, ' ') FROM tasks WHERE kind = 'merged'") == "merged:rec-2:available",
                    "the merged manifest queued with the last settle")
        }
    }

    @Test("uploaded to the store and verified: the object kept in its task, the local file deleted, the merged manifest queued inline and uploaded by the other instance, job.finished queued with every object")
    func uploaded() async throws {
        if let missing = S3Venv.missing { Issue.record(Comment(rawValue: missing)); return }
        try await ClusterStoreTests.withServer { pg in
            var t = try await ClusterStoreTests.two(pg, "uploaded")
            defer { t.close() }
            let dir = try Scene.tempDirectory("upload-tasks-moto")
            defer { try? FileManager.default.removeItem(at: dir) }
            let moto = try await LocalServer.moto(port: 18692)
            let storage = try Self.storage(moto.port)
            try await storage.createBucket()
            var a = t.a, b = t.b
            (a.webhooks, b.webhooks) = (true, true)
            t = ClusterStoreTests.Two(a: a, b: b, pg: t.pg, database: t.database, running: t.running)
            try await Self.endedRecording(t, "rec-3")
            let folder = dir.appendingPathComponent("rec-3")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let files = [try Self.file(folder, "audio.mka", bytes: 3000), try Self.file(folder, "manifest.json", bytes: 10)]
            let (onA, workA) = try Self.worker(t, a, storage: storage, dir: dir)
            let (_, workB) = try Self.worker(t, b, storage: storage, dir: dir)
            // The folder noted before the recording, queued by the sweep (its files listed and hashed).
            try await onA.notePart(RecordingPart(job: "rec-3", folder: folder.path, folderID: "f-a"))
            await onA.queueEndedFolders(a)
            #expect(try await t.sql("SELECT string_agg(args->>'name' || '@' || pinned_to, ' ' ORDER BY key) FROM tasks WHERE kind = 'upload'") == "audio.mka@a manifest.json@a")
            #expect(try await workB.round(session: 2) == 0, "b holds none of them")
            for _ in 0..<3 { try await workA.round(session: 1) }
            #expect(files.allSatisfy { !FileManager.default.fileExists(atPath: $0) }, "deleted once verified")
            #expect(try await t.sql("SELECT string_agg(state || ':' || (args->>'by'), ' ') FROM tasks WHERE kind = 'upload'") == "completed:a completed:a")
            // a's third round built the merged manifest, queued inline (any instance): sent by b.
            for _ in 0..<3 { try await workB.round(session: 2) }
            #expect(try await t.sql("SELECT state || ':' || coalesce(pinned_to, '-') || ':' || (args->>'by') FROM tasks WHERE key = 'rec/rec-3/recording.json'") == "completed:-:b")
            let merged = try JSONSerialization.jsonObject(with: Data(try await storage.get(key: "rec/rec-3/recording.json"))) as? [String: Any]
            #expect((merged?["files"] as? [[String: Any]])?.compactMap { $0["name"] as? String } == ["audio.mka", "manifest.json"])
            let bytes = try await storage.get(key: "rec/rec-3/audio.mka")
            let listed = (merged?["files"] as? [[String: Any]])?.first?["sha256"] as? String
            #expect(SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined() == listed, "the listing's hash is the object's")
            #expect(try await t.state("rec-3") == "done")
            let finished = try await t.sql("SELECT payload FROM tasks WHERE kind = 'webhook' AND key = 'rec-3.finished'")
            let data = (try JSONSerialization.jsonObject(with: Data(finished.utf8)) as? [String: Any])?["data"] as? [String: Any]
            #expect((data?["files"] as? [[String: Any]])?.count == 3, "every object named: \(finished)")
            let shown = try #require(try await a.uploads(of: "rec-3"))
            #expect(shown.uploaded == 3 && shown.pending == 0 && shown.failedTries == 0 && shown.finished == true, "\(shown)")
            await moto.stop()
        }
    }

    @Test("step 12 moves job_uploads onto tasks: pending available and pinned to its uploader (the inline merged manifest to none), uploaded completed with its object, missing discarded; GET's counts unchanged")
    func migration() async throws {
        try await ClusterStoreTests.withServer { pg in
            let old = try await SharedPostgres.database("old12").name
            for step in ClusterMigrations.steps where step.version <= 11 {
                for sql in step.sql { _ = try await pg.psql(sql, database: old) }
            }
            _ = try await pg.psql("""
                CREATE TABLE schema_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now());
                INSERT INTO schema_migrations (version) SELECT generate_series(1, 11);
                INSERT INTO jobs (id, kind, spec, created, state, final_state, ended) VALUES ('rec-m', 'recording', '{}', now(), 'uploading', 'done', now());
                INSERT INTO job_uploads (job_id, key, name, file, content, folder_id, size, sha256, uploader, uploader_session, state, object, attempts, last_error) VALUES
                    ('rec-m', 'rec/rec-m/a.mka', 'a.mka', '/d/a.mka', NULL, 'f', 10, 'aa', 'a', 1, 'pending', NULL, 3, 'the store answered 503'),
                    ('rec-m', 'rec/rec-m/b.mka', 'b.mka', '/d/b.mka', NULL, 'f', 20, 'bb', 'b', 2, 'uploaded', '{"key": "rec/rec-m/b.mka", "url": "u", "size": 20, "sha256": "bb", "etag": "e", "parts": 1}', 1, NULL),
                    ('rec-m', 'rec/rec-m/c.mka', 'c.mka', '/d/c.mka', NULL, 'f', NULL, NULL, 'a', 1, 'missing', NULL, 1, 'gone'),
                    ('rec-m', 'rec/rec-m/recording.json', 'recording.json', '/s/rec-m.recording.json', '{"job": "rec-m"}', NULL, NULL, NULL, 'b', 2, 'pending', NULL, 0, NULL)
                """, database: old)
            var log = Logger(label: "test.upload-tasks")
            log.logLevel = .warning
            let client = PostgresClient(configuration: .init(host: "127.0.0.1", port: pg.port, username: "sfubot", password: nil, database: old, tls: .disable),
                                        backgroundLogger: log)
            let running = Task { await client.run() }
            defer { running.cancel() }
            #expect(try await ClusterMigrations.run(client, logger: log) == ClusterMigrations.steps.map(\.version).filter { $0 >= 12 })
            let rows = try await pg.psql("""
                SELECT string_agg(args->>'name' || ':' || coalesce(pinned_to, '-') || ':' || state || ':' || attempts || ':' || (payload IS NOT NULL)
                                  || ':' || coalesce(args->>'by', '-') || ':' || coalesce((args->>'object')::jsonb->>'etag', '-'), ' ' ORDER BY key)
                FROM tasks WHERE kind = 'upload' AND job_id = 'rec-m'
                """, database: old)
            #expect(rows == "a.mka:a:available:3:false:-:- b.mka:b:completed:2:false:b:e c.mka:a:discarded:1:false:-:- recording.json:-:available:0:true:-:-")
            #expect(try await pg.psql("SELECT args->>'folder' || ':' || (args->>'size') || ':' || (args->>'sha256') FROM tasks WHERE key = 'rec/rec-m/a.mka'", database: old) == "f:10:aa")
            #expect(try await pg.psql("SELECT to_regclass('job_uploads') IS NULL", database: old) == "t", "dropped")
            let store = ClusterStore(client: client, instance: "a", lease: .seconds(60), log: log,
                                     session: .init(host: "127.0.0.1", port: pg.port, username: "sfubot", password: nil, database: old, tls: .disable))
            let shown = try #require(try await store.uploads(of: "rec-m"))
            #expect(shown.pending == 2 && shown.uploaded == 1 && shown.missing == 1 && shown.failedTries == 5 && shown.lastError == "the store answered 503", "\(shown)")
        }
    }
}

extension UploadTaskTests {
    @Test("a file's upload queued alone in the state folder (tasks/), started with --database: moved into the cluster's tasks pinned to this instance (its disk), the ended one kept local")
    func movedPinned() async throws {
        try await ClusterStoreTests.withServer { pg in
            let t = try await ClusterStoreTests.two(pg, "moved")
            defer { t.close() }
            let dir = try Scene.tempDirectory("upload-tasks-moved")
            defer { try? FileManager.default.removeItem(at: dir) }
            let local = try LocalTaskQueue(directory: dir.appendingPathComponent("tasks"), policy: TaskPolicy(schedule: TaskPolicy<DatabaseInstant>.standardSchedule),
                                           logger: Logger(label: "test.upload-tasks"))
            let args = ["name": "a.mka", "file": dir.appendingPathComponent("a.mka").path, "kind": "recording", "room": "1"]
            try local.enqueue([NewTask(kind: .upload, key: "rec/rec-5/a.mka", job: "rec-5", args: args),
                               NewTask(kind: .upload, key: "rec/rec-5/b.mka", job: "rec-5", args: args)]) { task, entry in
                if task.key.hasSuffix("b.mka") { entry.ended = .completed }
            }
            #expect(try await local.moveAll(into: t.a) == 1)
            #expect(try await t.sql("SELECT string_agg(key || '@' || coalesce(pinned_to, '-'), ' ') FROM tasks WHERE kind = 'upload'") == "rec/rec-5/a.mka@a")
            #expect(try await t.b.claim([.upload], session: 2, limit: 4).isEmpty, "on a's disk")
            #expect(try await t.a.claim([.upload], session: 1, limit: 4).map(\.key) == ["rec/rec-5/a.mka"])
            #expect(local.uploads(of: "rec-5")?.uploaded == 1 && local.uploads(of: "rec-5")?.pending == 0, "the ended one stays in the state folder")
        }
    }
}
