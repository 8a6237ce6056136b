#if canImport(Glibc)
import Glibc
#endif
import Bot
import Crypto
import Foundation
import Logging
import ObjectStore
@testable import Service
import Spool
import Testing
import TestSupport
import Webhooks

/// One instance's uploads (no `--database`) as `upload` tasks of the state folder's queue, tried
/// by the cluster's code (issue 41 item 4): a fake finished folder handed to publishing as a
/// recording's end, the worker's rounds run here, moto's S3 server (scripts/s3-venv) or a port
/// nobody listens on as the store. A "restart" is a new publishing on the same state folder,
/// its tasks made due instead of waiting out their backoff. The guarantees are issue 27's: a
/// failed upload never loses a file, the local file is deleted only after its object is
/// verified, tries survive restarts, `job.finished` names every object once all are verified.
@Suite(.serialized) struct LocalUploadTests {
    static let credentials = S3Credentials(accessKeyID: "AKIDLOCAL", secretAccessKey: "local-secret")
    static let log: Logger = {
        var log = Logger(label: "test.local-uploads")
        log.logLevel = .warning
        return log
    }()

    static func storage(_ port: Int) throws -> S3Client {
        S3Client(location: try S3Location(storage: "s3://sfubot-local/rec", endpoint: "http://127.0.0.1:\(port)", environment: [:]), credentials: credentials)
    }

    /// A serve's publishing on `state` (webhooks to a port nobody listens on: they stay queued,
    /// read here), and its worker trying uploads.
    static func publishing(_ state: URL, _ storage: S3Client) throws -> (JobPublishing, TaskWorker) {
        let secret = try WebhookSecret("whsec_" + Data(repeating: 3, count: 32).base64EncodedString())
        let publishing = try JobPublishing(stateDirectory: state, storage: storage, webhook: (URL(string: "http://127.0.0.1:9/hooks")!, secret), logger: log)
        var worker = TaskWorker(queue: publishing.tasks, webhooks: nil)
        worker.upload = { task in await publishing.uploadTask(task) }
        return (publishing, worker)
    }

    /// A file of random bytes and its SHA-256.
    static func file(_ dir: URL, _ name: String, bytes: Int) throws -> (path: String, sha256: String) {
        let random = try #require(FileHandle(forReadingAtPath: "/dev/urandom"))
        defer { try? random.close() }
        let data = try #require(try random.read(upToCount: bytes))
        let url = dir.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        try data.write(to: url)
        return (url.path, sha256(Array(data)))
    }

    static func sha256(_ bytes: [UInt8]) -> String { SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined() }

    /// `folder` ended as recording `job`; returns once its files are queued.
    static func ended(_ publishing: JobPublishing, _ job: String, _ folder: URL) async throws {
        publishing.ended(job: job, kind: "recording", room: 1234, failed: nil, folder: RecordingFolder(folder))
        #expect(await eventually(within: 10) { publishing.uploads(of: job) != nil }, "\(job)'s files queued")
    }

    /// Rounds until `done` holds, at most `limit`.
    static func work(_ worker: TaskWorker, rounds limit: Int = 12, until done: () -> Bool) async throws {
        for _ in 0..<limit where !done() { try await worker.round(session: nil) }
    }

    /// The state folder's tasks made due now: a restart after their backoff, not waited for.
    static func due(_ state: URL) throws {
        let spool = try Spool<LocalTaskQueue.Entry>(directory: state.appendingPathComponent("tasks"), what: "the test's task queue")
        for (id, var entry) in spool.load().entries where entry.ended == nil {
            entry.runAt = Date().addingTimeInterval(-1)
            try spool.put(id, entry)
        }
    }

    /// A webhook queued in `publishing`'s state folder (as on disk): its `data`.
    static func queued(_ publishing: JobPublishing, _ id: String) -> [String: Any]? {
        let payload = (try? publishing.tasks.spool.get(LocalTaskQueue.name(.webhook, id)))??.payload
        return payload.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }?["data"] as? [String: Any]
    }

    @Test("a finished folder's small file (one PUT) and 17 MiB one (3 parts): upload tasks, uploaded, verified, equal to the files and only then deleted; job.finished queued naming both; GET's uploads counted")
    func smallAndMultipart() async throws {
        if let missing = S3Venv.missing { Issue.record(Comment(rawValue: missing)); return }
        let dir = try Scene.tempDirectory("local-upload")
        defer { try? FileManager.default.removeItem(at: dir) }
        let moto = try await LocalServer.moto(port: 18611)
        let client = try Self.storage(moto.port)
        try await client.createBucket()
        let folder = dir.appendingPathComponent("rec-1")
        let small = try Self.file(folder, "small.mkv", bytes: 1000), large = try Self.file(folder, "large.mkv", bytes: 17 << 20)
        let (publishing, worker) = try Self.publishing(dir.appendingPathComponent("state"), client)
        try await Self.ended(publishing, "rec-1", folder)
        #expect(try await publishing.tasks.depth(.upload) == 2, "sfubot_upload_queue_depth's count")
        try await Self.work(worker) { publishing.uploads(of: "rec-1")?.pending == 0 }
        let shown = try #require(publishing.uploads(of: "rec-1"))
        #expect(shown.uploaded == 2 && shown.pending == 0 && shown.failedTries == 0 && shown.missing == 0, "\(shown)")
        #expect(try await publishing.tasks.depth(.upload) == 0)
        #expect(!FileManager.default.fileExists(atPath: small.path) && !FileManager.default.fileExists(atPath: large.path))
        #expect(Self.sha256(try await client.get(key: "rec/rec-1/small.mkv")) == small.sha256)
        #expect(Self.sha256(try await client.get(key: "rec/rec-1/large.mkv")) == large.sha256)
        let head = try await client.head(key: "rec/rec-1/large.mkv")
        #expect(head.etag.hasSuffix("-3") && head.sha256 == large.sha256)
        let files = try #require(Self.queued(publishing, "rec-1.finished")?["files"] as? [[String: Any]])
        #expect(files.compactMap { $0["name"] as? String } == ["large.mkv", "small.mkv"])
        #expect(files.compactMap { $0["sha256"] as? String } == [large.sha256, small.sha256])
        await moto.stop()
    }

    @Test("the store down and serve restarted meanwhile: every file kept with its tries, upload.failed on each first; uploaded once the store is back, job.finished after the last")
    func storeDownThenBack() async throws {
        if let missing = S3Venv.missing { Issue.record(Comment(rawValue: missing)); return }
        let dir = try Scene.tempDirectory("local-upload-down")
        defer { try? FileManager.default.removeItem(at: dir) }
        let port = 18612, state = dir.appendingPathComponent("state"), folder = dir.appendingPathComponent("rec-2")
        let client = try Self.storage(port)
        let files = try [Self.file(folder, "a.mkv", bytes: 5000), Self.file(folder, "b.mkv", bytes: 7 << 20), Self.file(folder, "manifest.json", bytes: 300)]
        let (first, failing) = try Self.publishing(state, client)
        try await Self.ended(first, "rec-2", folder)
        // Nothing listens: each file's try fails, and every file stays.
        try await Self.work(failing) { (first.uploads(of: "rec-2")?.failedTries ?? 0) >= 3 }
        let down = try #require(first.uploads(of: "rec-2"))
        #expect(down.pending == 3 && down.failedTries == 3 && down.lastError?.contains("cannot reach") == true, "\(down)")
        #expect(files.allSatisfy { FileManager.default.fileExists(atPath: $0.path) })
        for f in files {
            let id = "upload-\(LocalTaskQueue.fileID(key: "rec/rec-2/\(URL(fileURLWithPath: f.path).lastPathComponent)")).failed.0"
            #expect(Self.queued(first, id)?["attempts"] as? Int == 1, "\(id)")
        }
        #expect(Self.queued(first, "rec-2.finished") == nil, "job.finished waits for the store")

        // A restart: a new publishing on the same folder finds the three tasks and their tries.
        try Self.due(state)
        let (second, working) = try Self.publishing(state, client)
        #expect(second.uploads(of: "rec-2")?.pending == 3 && second.uploads(of: "rec-2")?.failedTries == 3)
        let moto = try await LocalServer.moto(port: port)
        try await client.createBucket()
        try await Self.work(working) { second.uploads(of: "rec-2")?.pending == 0 }
        let done = try #require(second.uploads(of: "rec-2"))
        #expect(done.uploaded == 3 && done.failedTries == 3 && done.lastError == nil, "\(done)")
        for f in files {
            #expect(Self.sha256(try await client.get(key: "rec/rec-2/\(URL(fileURLWithPath: f.path).lastPathComponent)")) == f.sha256)
            #expect(!FileManager.default.fileExists(atPath: f.path))
        }
        #expect((Self.queued(second, "rec-2.finished")?["files"] as? [[String: Any]])?.count == 3)
        await moto.stop()
    }

    @Test("a store that answers a wrong checksum (a tampering proxy): detected, the local files kept, the multipart upload aborted; sent right after a restart on an honest path")
    func checksumMismatch() async throws {
        if let missing = S3Venv.missing { Issue.record(Comment(rawValue: missing)); return }
        let dir = try Scene.tempDirectory("local-upload-tamper")
        defer { try? FileManager.default.removeItem(at: dir) }
        let moto = try await LocalServer.moto(port: 18613)
        let proxy = try await LocalServer.python("tamper_proxy.py", ["18614", "18613"], port: 18614)
        let direct = try Self.storage(moto.port), tampered = try Self.storage(proxy.port)
        try await direct.createBucket()
        let state = dir.appendingPathComponent("state"), folder = dir.appendingPathComponent("rec-3")
        let small = try Self.file(folder, "small.mkv", bytes: 2000), large = try Self.file(folder, "large.mkv", bytes: 17 << 20)
        let (first, fooled) = try Self.publishing(state, tampered)
        try await Self.ended(first, "rec-3", folder)
        try await Self.work(fooled) { (first.uploads(of: "rec-3")?.failedTries ?? 0) >= 2 }
        let shown = try #require(first.uploads(of: "rec-3"))
        #expect(shown.uploaded == 0 && shown.pending == 2 && shown.lastError?.contains("checksum") == true, "\(shown)")
        #expect(FileManager.default.fileExists(atPath: small.path) && FileManager.default.fileExists(atPath: large.path))
        // The aborted multipart upload left no parts behind.
        let uploads = try await direct.send("GET", key: nil, query: [("uploads", "")]).text
        #expect(!uploads.contains("<UploadId>"), "\(uploads)")

        try Self.due(state)
        let (healed, honest) = try Self.publishing(state, direct)
        try await Self.work(honest) { healed.uploads(of: "rec-3")?.pending == 0 }
        #expect(healed.uploads(of: "rec-3")?.uploaded == 2)
        #expect(Self.sha256(try await direct.get(key: "rec/rec-3/large.mkv")) == large.sha256)
        #expect(!FileManager.default.fileExists(atPath: large.path))
        await proxy.stop()
        await moto.stop()
    }

    @Test("a FIFO queued is refused at once, not waited on (reads run off Swift's pool), and stays queued; a vanished file is given up, named missing by job.finished")
    func fifoRefusedVanishedGivenUp() async throws {
        let dir = try Scene.tempDirectory("local-upload-fifo")
        defer { try? FileManager.default.removeItem(at: dir) }
        // Nothing listens there: only the local side is tried.
        let (publishing, worker) = try Self.publishing(dir.appendingPathComponent("state"), try Self.storage(18615))
        let fifo = dir.appendingPathComponent("fifo.mkv").path
        #expect(mkfifo(fifo, 0o600) == 0)
        try publishing.tasks.enqueue(NewTask(kind: .upload, key: "rec/rec-f/fifo.mkv", job: "rec-f",
                                             args: ["name": "fifo.mkv", "file": fifo, "kind": "recording", "room": "1"]))
        let folder = dir.appendingPathComponent("rec-g")
        let gone = try Self.file(folder, "gone.mkv", bytes: 10)
        try await Self.ended(publishing, "rec-g", folder)
        unlink(gone.path)
        // An open() of a FIFO without a writer used to block its thread for good.
        let running = Task { await worker.run(session: { nil }, log: Self.log) }
        let settled = await eventually(within: 30) {
            publishing.uploads(of: "rec-f")?.lastError?.contains("not a regular file") == true && publishing.uploads(of: "rec-g")?.pending == 0
        }
        running.cancel()
        await running.value
        #expect(settled, "\(String(describing: publishing.uploads(of: "rec-f"))) \(String(describing: publishing.uploads(of: "rec-g")))")
        #expect(publishing.uploads(of: "rec-f")?.pending == 1, "the FIFO's task is kept")
        #expect(FileManager.default.fileExists(atPath: fifo))
        let g = try #require(publishing.uploads(of: "rec-g"))
        #expect(g.missing == 1 && g.uploaded == 0, "\(g)")
        let finished = try #require(Self.queued(publishing, "rec-g.finished"))
        #expect(finished["missing"] as? [String] == ["gone.mkv"] && (finished["files"] as? [Any])?.isEmpty == true, "\(finished)")
    }
}
