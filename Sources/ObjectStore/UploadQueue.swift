public import Foundation
public import Logging
public import Spool
import CoreMetrics
import Crypto

/// One file waiting for the store.
public struct UploadEntry: Retrying, Equatable {
    public var file: String
    public var key: String
    /// Delete the local file once its object is verified.
    public var deleteAfterUpload: Bool
    /// What the caller wants back with the result (a job id, a file's role).
    public var context: [String: String]
    public var attempts = 0
    public var notBefore: Date
    public let created: Date
    public var lastError: String?
    /// Set once the object is verified, before the local file is deleted: a crash between the
    /// two finds the file gone and the object known, and finishes instead of failing.
    public var uploaded: UploadedObject?

    public init(file: String, key: String, deleteAfterUpload: Bool, context: [String: String] = [:], now: Date = Date()) {
        (self.file, self.key, self.deleteAfterUpload, self.context) = (file, key, deleteAfterUpload, context)
        (notBefore, created) = (now, now)
    }
}

/// Uploads that survive restarts: each file is an entry in a spool directory (in serve's state
/// directory) until its object is verified. Retries back off exponentially (5 s doubling to
/// 10 min by default) and never give up while the file is there: a failed upload never loses a
/// file. Metrics: `sfubot_upload_queue_depth`, `sfubot_upload_bytes_total`,
/// `sfubot_upload_failures_total`, `sfubot_uploads_total`.
public final class UploadQueue: Sendable {
    public struct Stats: Sendable, Equatable {
        public var depth = 0
        public var uploaded = 0
        public var uploadedBytes = 0
        public var failures = 0
        public var checksumMismatches = 0
    }

    public typealias Uploaded = @Sendable (UploadEntry, UploadedObject) async -> Void
    /// A failed try: the entry, why, and whether it was given up (its file is gone: never retried).
    public typealias Failed = @Sendable (UploadEntry, String, Bool) async -> Void

    let runner: SpoolRunner<UploadEntry>
    let client: S3Client
    let sizes: UploadSizes
    let logger: Logger
    private let counts = Tally(Stats())
    private let uploaded: Uploaded
    private let failed: Failed

    /// `uploaded` hears of each verified object; `failed` of each failed try (with its reason).
    public init(directory: URL, client: S3Client, sizes: UploadSizes = UploadSizes(),
                schedule: RetrySchedule = RetrySchedule(first: .seconds(5), maximum: .seconds(600)),
                logger: Logger = Logger(label: "sfubot.upload"),
                uploaded: @escaping Uploaded = { _, _ in }, failed: @escaping Failed = { _, _, _ in }) throws(SpoolError) {
        let spool = try Spool<UploadEntry>(directory: directory, what: "the upload queue")
        let counts = self.counts
        runner = SpoolRunner(spool: spool, schedule: schedule, logger: logger) { depth in
            counts.update { $0.depth = depth }
            Gauge(label: "sfubot_upload_queue_depth").record(depth)
        }
        (self.client, self.sizes, self.logger, self.uploaded, self.failed) = (client, sizes, logger, uploaded, failed)
        let depth = spool.load().entries.count
        counts.update { $0.depth = depth }
        Gauge(label: "sfubot_upload_queue_depth").record(depth)
    }

    public var stats: Stats { counts.value }

    /// Queues `file` for `key` (under the location's prefix already). The entry's id comes from
    /// the key, so queueing the same object again after a crash adds nothing. Returns the id.
    @discardableResult
    public func enqueue(file: String, key: String, deleteAfterUpload: Bool = true, context: [String: String] = [:]) throws(SpoolError) -> String {
        let id = Self.id(key: key)
        if try runner.add(id, UploadEntry(file: file, key: key, deleteAfterUpload: deleteAfterUpload, context: context)) {
            counts.update { $0.depth += 1 }
            Gauge(label: "sfubot_upload_queue_depth").record(counts.update { $0.depth })
        }
        return id
    }

    /// The entries still waiting (with their tries and last error).
    public func pending() -> [UploadEntry] { runner.spool.load().entries.map(\.entry) }

    /// Uploads until cancelled.
    public func run() async {
        await runner.run { id, entry in await self.attempt(id, entry) }
    }

    /// The queue entry id of an object key (readable tail, hash for uniqueness).
    public static func id(key: String) -> String {
        let readable = String(key.suffix(60).map { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "." ? $0 : "_" })
        let digest = SHA256.hash(data: Data(key.utf8)).prefix(8).map { String(format: "%02x", $0) }.joined()
        return "\(digest)-\(readable)"
    }

    func attempt(_ id: String, _ entry: UploadEntry) async -> RetryOutcome {
        var entry = entry
        if let object = entry.uploaded {
            // Told again: a crash may have come between the entry's write and the telling.
            await uploaded(entry, object)
            return await finish(entry, object)
        }
        do {
            let object = try await client.upload(file: entry.file, key: entry.key, sizes: sizes)
            entry.uploaded = object
            try runner.spool.put(id, entry)
            counts.update {
                $0.uploaded += 1
                $0.uploadedBytes += object.size
            }
            Counter(label: "sfubot_upload_bytes_total").increment(by: object.size)
            Counter(label: "sfubot_uploads_total").increment()
            logger.info("uploaded \(entry.file) to \(object.url) (\(object.size) bytes, \(object.parts) part(s), verified)")
            await uploaded(entry, object)
            return await finish(entry, object)
        } catch let error as ObjectStoreError {
            return await failure(entry, "\(error)", retryable: error.retryable, mismatch: error.isChecksumMismatch)
        } catch {
            return await failure(entry, "\(error)", retryable: true, mismatch: false)
        }
    }

    private func finish(_ entry: UploadEntry, _ object: UploadedObject) async -> RetryOutcome {
        if entry.deleteAfterUpload, let why = await LocalFile.delete(entry.file) {
            return .retry("uploaded and verified, but \(entry.file) cannot be deleted: \(why)")
        }
        return .done
    }

    private func failure(_ entry: UploadEntry, _ why: String, retryable: Bool, mismatch: Bool) async -> RetryOutcome {
        // Cut short by a shutdown: not the store's failure (the runner keeps the entry as it was).
        if Task.isCancelled { return .retry("cancelled") }
        counts.update {
            $0.failures += 1
            if mismatch { $0.checksumMismatches += 1 }
        }
        Counter(label: "sfubot_upload_failures_total").increment()
        // A file that is gone cannot be uploaded; any other failure keeps the entry and the file.
        let givenUp = retryable ? false : !(await LocalFile.exists(entry.file))
        await failed(entry, why, givenUp)
        return givenUp ? .giveUp(why) : .retry(why)
    }
}
