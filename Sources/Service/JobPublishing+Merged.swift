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
    /// Folders an operator gave up (their owner's disk gone): what the recording lacks, and why.
    var abandoned: [AbandonedFolder]?

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

    /// `owners` from the cluster's history; `folders` the recording's own manifests (segments,
    /// frames): one on shared storage, one per owner's disk otherwise, each with the prefix of
    /// its files' names in the bucket.
    init(job: String, folders: [(prefix: String, manifest: RecordingManifest)], owners: [JobStatus.Owner], files: [File],
         abandoned: [AbandonedFolder] = []) {
        let manifests = folders.map(\.manifest)
        (self.job, self.files) = (job, files)
        self.abandoned = abandoned.isEmpty ? nil : abandoned
        room = manifests.first?.room ?? 0
        started = manifests.map(\.started).min() ?? Date()
        ended = manifests.compactMap(\.ended).max()
        func holder(_ time: Date) -> Int? {
            owners.lastIndex { $0.since <= time } ?? (owners.isEmpty ? nil : 0)
        }
        var segments = Array(repeating: [RecordingManifest.Feed](), count: owners.count)
        for (prefix, manifest) in folders {
            for var feed in manifest.feeds {
                feed.file = prefix + feed.file
                if let i = holder(feed.firstFrame ?? feed.joined) { segments[i].append(feed) }
            }
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

/// A folder of a recording given up by an operator (`POST …/uploads/abandon`: its owner's
/// disk gone for good), as the merged manifest and `job.finished` name it.
public struct AbandonedFolder: Codable, Sendable, Equatable {
    /// The instances that wrote it.
    public var owners: [String]
    /// Where its files would be in the recording.
    public var prefix: String
    /// Who gave it up, and why.
    public var reason: String
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
    /// A job's end to publishing. With `--database` and storage, a recording's folders are
    /// queued by the instances holding them once its end is in the database
    /// (JobPublishing+Folders), this one's included.
    /// `folder`: the recording's, still held (else reached by its path).
    func publishEnded(_ job: Job, _ outcome: Job.Outcome, folder: RecordingFolder? = nil) {
        guard let publishing = config.publishing else { return }
        let failed = outcome.state == .failed ? outcome.error ?? "failed" : nil
        // Its held folder; one that never ran here (its time was up while serve was away) by its path.
        let folder = folder ?? job.spec.out.map { RecordingFolder(URL(fileURLWithPath: $0)) }
        publishing.ended(job: job.id, kind: job.spec.kind.rawValue, room: job.spec.room, failed: failed, folder: folder)
        if let relay = job.relay?.snapshot {
            publishing.relayEnded(job: job.id, kind: job.spec.kind.rawValue, room: job.spec.room, resumes: job.resumes, to: job.shownDestination,
                                  status: relay, failed: failed)
        }
    }
}
