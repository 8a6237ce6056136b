#if canImport(Glibc)
import Glibc
#endif
import Crypto
import Foundation
import ObjectStore
import Spool
import Testing
import TestSupport

/// The upload queue against moto's S3 server (scripts/s3-venv), started on 127.0.0.1 here.
/// moto is a full S3 REST implementation in one pip package that checks Content-MD5, computes
/// ETags as S3 does (multipart included) and starts in a second; MinIO would be a binary
/// download, which CI cannot fetch (docs/object-storage.md).
@Suite(.serialized) struct UploadQueueTests {
    static let credentials = S3Credentials(accessKeyID: "AKIDTEST", secretAccessKey: "test-secret")
    static let fast = RetrySchedule(first: .milliseconds(200), maximum: .seconds(1))
    static let sizes = UploadSizes(multipartThreshold: 6 << 20, partSize: 5 << 20)

    static func client(_ port: Int) throws -> S3Client {
        S3Client(location: try S3Location(storage: "s3://sfubot-test/recordings", endpoint: "http://127.0.0.1:\(port)", environment: [:]),
                 credentials: credentials)
    }

    /// A file of random bytes and its SHA-256.
    static func file(_ dir: URL, _ name: String, bytes: Int) throws -> (path: String, sha256: String) {
        var rng = SystemRandomNumberGenerator()
        let data = Data((0..<bytes).map { _ in UInt8.random(in: 0...255, using: &rng) })
        let url = dir.appendingPathComponent(name)
        try data.write(to: url)
        return (url.path, SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined())
    }

    static func sha256(_ bytes: [UInt8]) -> String { SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined() }

    @Test("a small file (one PUT) and an 11 MiB one (3 parts) are uploaded, verified, equal to the files, and only then deleted locally")
    func smallAndMultipart() async throws {
        if let missing = S3Venv.missing { Issue.record(Comment(rawValue: missing)); return }
        let dir = try Scene.tempDirectory("upload")
        defer { try? FileManager.default.removeItem(at: dir) }
        let moto = try await LocalServer.moto(port: 18611)
        let client = try Self.client(moto.port)
        try await client.createBucket()
        let small = try Self.file(dir, "small.mkv", bytes: 1000), large = try Self.file(dir, "large.mkv", bytes: 11 << 20)
        let queue = try UploadQueue(directory: dir.appendingPathComponent("queue"), client: client, sizes: Self.sizes, schedule: Self.fast)
        try queue.enqueue(file: small.path, key: client.location.key("job-1/small.mkv"))
        try queue.enqueue(file: large.path, key: client.location.key("job-1/large.mkv"))
        #expect(queue.stats.depth == 2)
        let running = Task { await queue.run() }
        let done = await eventually(within: 120) { queue.stats.uploaded == 2 && queue.stats.depth == 0 }
        running.cancel()
        await running.value
        #expect(done, "\(queue.pending())")
        #expect(queue.stats.failures == 0 && queue.stats.uploadedBytes == 1000 + (11 << 20))
        #expect(!FileManager.default.fileExists(atPath: small.path) && !FileManager.default.fileExists(atPath: large.path))
        #expect(Self.sha256(try await client.get(key: "recordings/job-1/small.mkv")) == small.sha256)
        #expect(Self.sha256(try await client.get(key: "recordings/job-1/large.mkv")) == large.sha256)
        let head = try await client.head(key: "recordings/job-1/large.mkv")
        #expect(head.etag.hasSuffix("-3") && head.sha256 == large.sha256)
        await moto.stop()
    }

    @Test("the store down for a while and the queue restarted meanwhile: nothing lost, every file uploaded once the store is back")
    func storeDownThenBack() async throws {
        if let missing = S3Venv.missing { Issue.record(Comment(rawValue: missing)); return }
        let dir = try Scene.tempDirectory("upload-down")
        defer { try? FileManager.default.removeItem(at: dir) }
        let port = 18612
        let client = try Self.client(port)
        let files = try [Self.file(dir, "a.mkv", bytes: 5000), Self.file(dir, "b.mkv", bytes: 7 << 20), Self.file(dir, "manifest.json", bytes: 300)]
        let queueDir = dir.appendingPathComponent("queue")
        let first = try UploadQueue(directory: queueDir, client: client, sizes: Self.sizes, schedule: Self.fast)
        for f in files { try first.enqueue(file: f.path, key: client.location.key("down/\(URL(fileURLWithPath: f.path).lastPathComponent)")) }
        let failing = Task { await first.run() }
        // Nothing listens: every file fails at least twice, and every file stays.
        #expect(await eventually(within: 60) { first.stats.failures >= 6 })
        failing.cancel()
        await failing.value
        #expect(files.allSatisfy { FileManager.default.fileExists(atPath: $0.path) })
        #expect(first.stats.uploaded == 0)

        // A restart: a new queue on the same directory finds the three entries and their tries.
        let second = try UploadQueue(directory: queueDir, client: client, sizes: Self.sizes, schedule: Self.fast)
        let pending = second.pending()
        #expect(pending.count == 3 && pending.allSatisfy { $0.attempts >= 1 && $0.lastError?.contains("cannot reach") == true })
        #expect(second.stats.depth == 3)
        let moto = try await LocalServer.moto(port: port)
        try await client.createBucket()
        let running = Task { await second.run() }
        let done = await eventually(within: 120) { second.stats.depth == 0 && second.stats.uploaded == 3 }
        running.cancel()
        await running.value
        #expect(done, "\(second.pending())")
        for f in files {
            let key = client.location.key("down/\(URL(fileURLWithPath: f.path).lastPathComponent)")
            #expect(Self.sha256(try await client.get(key: key)) == f.sha256)
            #expect(!FileManager.default.fileExists(atPath: f.path))
        }
        await moto.stop()
    }

    @Test("a store that answers a wrong checksum (a tampering proxy): detected, the local file kept, the multipart upload aborted; sent right later")
    func checksumMismatch() async throws {
        if let missing = S3Venv.missing { Issue.record(Comment(rawValue: missing)); return }
        let dir = try Scene.tempDirectory("upload-tamper")
        defer { try? FileManager.default.removeItem(at: dir) }
        let moto = try await LocalServer.moto(port: 18613)
        let proxy = try await LocalServer.python("tamper_proxy.py", ["18614", "18613"], port: 18614)
        let direct = try Self.client(moto.port), tampered = try Self.client(proxy.port)
        try await direct.createBucket()
        let small = try Self.file(dir, "small.mkv", bytes: 2000), large = try Self.file(dir, "large.mkv", bytes: 7 << 20)
        let queueDir = dir.appendingPathComponent("queue")
        let queue = try UploadQueue(directory: queueDir, client: tampered, sizes: Self.sizes, schedule: Self.fast)
        try queue.enqueue(file: small.path, key: "t/small.mkv")
        try queue.enqueue(file: large.path, key: "t/large.mkv")
        let running = Task { await queue.run() }
        #expect(await eventually(within: 60) { queue.stats.checksumMismatches >= 2 })
        running.cancel()
        await running.value
        #expect(queue.stats.uploaded == 0)
        #expect(FileManager.default.fileExists(atPath: small.path) && FileManager.default.fileExists(atPath: large.path))
        let pending = queue.pending()
        #expect(pending.count == 2 && pending.allSatisfy { $0.lastError?.contains("checksum") == true })
        // The aborted multipart upload left no parts behind.
        let uploads = try await direct.send("GET", key: nil, query: [("uploads", "")]).text
        #expect(!uploads.contains("<UploadId>"), "\(uploads)")

        // The same entries, later, through an honest path: uploaded and verified.
        let healed = try UploadQueue(directory: queueDir, client: direct, sizes: Self.sizes, schedule: Self.fast)
        let again = Task { await healed.run() }
        #expect(await eventually(within: 60) { healed.stats.uploaded == 2 && healed.stats.depth == 0 })
        again.cancel()
        await again.value
        #expect(Self.sha256(try await direct.get(key: "t/large.mkv")) == large.sha256)
        await proxy.stop()
        await moto.stop()
    }

    @Test("a FIFO in the queue is refused at once, not waited on (reads run off Swift's pool), and stays queued; a vanished file is given up")
    func fifoRefusedVanishedGivenUp() async throws {
        let dir = try Scene.tempDirectory("upload-fifo")
        defer { try? FileManager.default.removeItem(at: dir) }
        // Nothing listens there: only the local side is tried.
        let client = try Self.client(18615)
        let fifo = dir.appendingPathComponent("fifo.mkv").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let gone = dir.appendingPathComponent("gone.mkv").path
        let queue = try UploadQueue(directory: dir.appendingPathComponent("queue"), client: client, sizes: Self.sizes, schedule: Self.fast)
        try queue.enqueue(file: fifo, key: "f/fifo.mkv")
        try queue.enqueue(file: gone, key: "f/gone.mkv")
        let running = Task { await queue.run() }
        // An open() of a FIFO without a writer used to block its thread for good.
        let refused = await eventually(within: 30) {
            let pending = queue.pending()
            return pending.count == 1 && pending.contains { $0.lastError?.contains("not a regular file") == true }
        }
        running.cancel()
        await running.value
        #expect(refused, "\(queue.pending())")
        #expect(queue.pending().map(\.key) == ["f/fifo.mkv"], "the vanished file's entry is given up, the FIFO's kept")
        #expect(FileManager.default.fileExists(atPath: fifo))
    }
}
