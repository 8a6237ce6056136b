import Bot
import Foundation
import Logging

/// A recording as the bucket holds it once every instance that held the job is done with it
/// (`recording.json` at the job's prefix): the owners in order, each with the segment files it
/// wrote, and a gap for each failover, measured from the segments' frames on either side (the
/// last frame the old owner wrote, the first the new one did). Written and queued by the
/// instance that finishes the job, with the other files; sizes and SHA-256 are the files' as
/// queued, which their upload then verifies against the store.
struct MergedManifest: Codable, Sendable {
    var job: String
    var room: Int64
    var started: Date
    var ended: Date?
    var owners: [Owner]
    var gaps: [Gap]
    /// Every file of the folder (segments, mix, manifest.json, proof), with its object key.
    var files: [File]

    struct Owner: Codable, Sendable {
        var instance: String
        var cause: String
        var since: Date
        var until: Date?
        var endCause: String?
        /// The segment files this owner wrote (by their first join while it held the job).
        var segments: [String]
    }

    struct Gap: Codable, Sendable {
        var from: String
        var to: String
        /// The last frame written before the failover and the first after it (nil: no segment on that side).
        var lastFrameBefore: Date?
        var firstFrameAfter: Date?
        var seconds: Double?
        var cause: String
    }

    struct File: Codable, Sendable {
        var name: String
        var key: String
        var size: Int
        var sha256: String
    }

    /// `owners` from the cluster's history; `manifest` the recording's own (segments, frames).
    init(job: String, manifest: RecordingManifest, owners: [JobStatus.Owner], files: [File]) {
        (self.job, room, started, ended, self.files) = (job, manifest.room, manifest.started, manifest.ended, files)
        func holder(_ time: Date) -> Int? {
            owners.lastIndex { $0.since <= time } ?? (owners.isEmpty ? nil : 0)
        }
        var segments = Array(repeating: [RecordingManifest.Feed](), count: owners.count)
        for feed in manifest.feeds {
            if let i = holder(feed.firstFrame ?? feed.joined) { segments[i].append(feed) }
        }
        self.owners = owners.enumerated().map { i, o in
            Owner(instance: o.instance, cause: o.cause, since: o.since, until: o.until, endCause: o.endCause, segments: segments[i].map(\.file))
        }
        gaps = owners.indices.dropFirst().map { i in
            let before = segments[..<i].joined().compactMap(\.lastFrame).max()
            let after = segments[i].compactMap(\.firstFrame).min()
            let previous = owners[i - 1]
            let seconds = before.flatMap { b in after.map { max(0, $0.timeIntervalSince(b)) } }
            let cause = owners[i].cause == "failover"
                ? (previous.endCause == "session ended"
                    ? "failover: \(previous.instance)'s database session ended (its process or its connection gone); \(owners[i].instance) took the job"
                    : "failover: \(previous.instance)'s lease ran out (\(previous.endCause ?? "lease expired")); \(owners[i].instance) took the job")
                : "\(owners[i].cause): \(previous.instance) \(previous.endCause ?? "ended its run"); \(owners[i].instance) took the job"
            return Gap(from: previous.instance, to: owners[i].instance, lastFrameBefore: before, firstFrameAfter: after, seconds: seconds, cause: cause)
        }
    }
}

extension MergedManifest {
    /// Written to `path` for the upload queue (dates with their fractions: the gaps are short).
    func write(to path: URL) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, e in
            var c = e.singleValueContainer()
            try c.encode(Date.ISO8601FormatStyle(includingFractionalSeconds: true).format(date))
        }
        try FileManager.default.createDirectory(at: path.deletingLastPathComponent(), withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try encoder.encode(self).write(to: path, options: .atomic)
    }
}

extension JobManager {
    /// A job's end to publishing; with `--database`, a recording's owners from the database
    /// first, for its merged manifest.
    func publishEnded(_ job: Job, _ outcome: Job.Outcome) {
        guard let publishing = config.publishing else { return }
        let failed = outcome.state == .failed ? outcome.error ?? "failed" : nil
        let (id, kind, room, out) = (job.id, job.spec.kind.rawValue, job.spec.room, job.spec.out)
        guard let cluster, job.spec.kind == .recording else {
            publishing.ended(job: id, kind: kind, room: room, failed: failed, directory: out)
            return
        }
        let (log, session) = (log, jobSessions[id] ?? liveSession)
        Task {
            let owners: [JobStatus.Owner]?
            do { owners = try await cluster.owners([id])[id] } catch {
                log.warning("job \(id): its owners cannot be read (\(error)); its files are uploaded without a merged manifest")
                owners = nil
            }
            publishing.ended(job: id, kind: kind, room: room, failed: failed, directory: out, owners: owners, session: session)
        }
    }
}

extension JobPublishing {
    /// The merged manifest of a recording's folder, written to the state directory; nil (and
    /// logged) when the folder has no manifest to read.
    func merged(job: String, directory: String, owners: [JobStatus.Owner], found: [LocalFile], entries: [BatchFile]) -> URL? {
        do {
            let manifest = try RecordingManifest.read(from: URL(fileURLWithPath: directory))
            let files = zip(found, entries).map { MergedManifest.File(name: $1.name, key: $1.key, size: $0.size, sha256: $0.sha256) }
            let path = mergedDirectory.appendingPathComponent("\(job).recording.json")
            try MergedManifest(job: job, manifest: manifest, owners: owners, files: files).write(to: path)
            return path
        } catch {
            logger.error("job \(job): no merged manifest (\(error)); its files are uploaded without one")
            return nil
        }
    }
}
