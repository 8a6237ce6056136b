import Bot
import Foundation
import Logging
import ObjectStore
import Proof

/// The `data` of every job event; fields that do not apply are left out.
struct JobEvent: Encodable, Sendable {
    var job: String
    var kind: String
    var room: Int64
    var resumes: Int?
    var reason: String?
    var files: [FileEvent]?
    /// Files of the folder that vanished before they could be uploaded.
    var missing: [String]?
    /// Folders an operator gave up, their owner's disk gone.
    var abandoned: [AbandonedFolder]?
    /// `job.reconnecting`: when the outage began, and its number in this run of the job.
    var since: Date?
    var outage: Int?
    /// `relay.*`: the destination as GET shows it (no stream name, token or key), and at the
    /// end the outages it had.
    var to: String?
    var outages: Int?

    init(job: String, kind: String, room: Int64, resumes: Int? = nil, reason: String? = nil, files: [FileEvent]? = nil, missing: [String]? = nil,
         since: Date? = nil, outage: Int? = nil, to: String? = nil, outages: Int? = nil) {
        (self.job, self.kind, self.room, self.resumes, self.reason, self.files, self.missing) = (job, kind, room, resumes, reason, files, missing)
        (self.since, self.outage, self.to, self.outages) = (since, outage, to, outages)
    }
}

extension JobEvent {
    /// `job.finished` of a recording whose uploads finished with `--database`: every object,
    /// the files missing, the folders abandoned.
    init(job: String, _ finished: ClusterStore.FinishedUploads) {
        let files = finished.files.compactMap { f in f.object.map { FileEvent(name: f.name, object: $0) } }
        let missing = finished.files.filter { $0.object == nil }.map(\.name)
        self.init(job: job, kind: finished.kind, room: finished.room, files: files, missing: missing.isEmpty ? nil : missing)
        abandoned = finished.abandoned.isEmpty ? nil : finished.abandoned
    }
}

/// One file of `job.finished`: its name in the recording, size, SHA-256, and where it is (the
/// object's URL with storage, else its local path).
struct FileEvent: Encodable, Sendable {
    var name: String
    var size: Int
    var sha256: String
    var url: String?
    var path: String?

    init(name: String, object: UploadedObject) {
        (self.name, size, sha256, url, path) = (name, object.size, object.sha256, object.url, nil)
    }

    init(local: RecordingFiles.File, in folder: RecordingFolder) {
        (name, size, sha256, url, path) = (local.name, local.size, local.sha256, nil, folder.shown.appendingPathComponent(local.name).path)
    }
}

struct UploadFailedEvent: Encodable, Sendable {
    var job: String?
    var file: String
    var key: String
    var attempts: Int
    var reason: String
}

extension JobPublishing {
    /// A finished recording's files (RecordingFiles: the list its proof signs), read through
    /// `folder` (the job's held one, or opened once by its path); none if it cannot be listed,
    /// said in the log. Blocking: on `files`.
    func listed(_ folder: RecordingFolder, job: String) -> [RecordingFiles.File] {
        do { return try folder.files() } catch {
            logger.error("job \(job): its folder \(folder.shown.path) cannot be listed (\(folder.showing("\(error)"))); its files stay there, not published")
            return []
        }
    }
}
