import Crypto
import Foundation
import ObjectStore

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

    init(local: JobPublishing.LocalFile) {
        (name, size, sha256, url, path) = (local.relative, local.size, local.sha256, nil, local.path)
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
    struct LocalFile {
        var path: String
        var relative: String
        var size = 0
        var sha256 = ""
    }

    /// Every regular file below a recording's folder (manifest and proof included, hidden ones not), sorted;
    /// hashed when `hash` (an upload hashes what it sends itself).
    static func localFiles(_ directory: String, hash: Bool) -> [LocalFile] {
        let root = URL(fileURLWithPath: directory).standardizedFileURL
        guard let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.isRegularFileKey]) else { return [] }
        var files: [LocalFile] = []
        // Hidden files are the recorder's own (the folder's marker, a killed process's
        // manifest reserve or half-written temporary), never the recording's.
        for case let url as URL in walker where !url.lastPathComponent.hasPrefix(".")
            && (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true {
            let path = url.standardizedFileURL.path
            var file = LocalFile(path: path, relative: String(path.dropFirst(root.path.count).drop { $0 == "/" }))
            if hash {
                guard let (size, sha256) = Self.hash(path) else { continue }
                (file.size, file.sha256) = (size, sha256)
            }
            files.append(file)
        }
        return files.sorted { $0.relative < $1.relative }
    }

    static func hash(_ path: String) -> (Int, String)? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        var digest = SHA256(), size = 0
        while let chunk = try? handle.read(upToCount: 1 << 20), !chunk.isEmpty {
            digest.update(data: chunk)
            size += chunk.count
        }
        return (size, digest.finalize().map { String(format: "%02x", $0) }.joined())
    }
}
