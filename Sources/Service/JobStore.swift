import Bot
import Foundation
import Logging

/// Jobs persisted in `--state-dir`/jobs, one JSON file each (0600 in a 0700 folder: a request
/// may hold a call key), written atomically. A job without an outcome was running when the
/// service stopped: the next start takes it up again.
struct JobStore: Sendable {
    struct Record: Codable, Sendable {
        var id: String
        var spec: JobSpec
        var created: Date
        var resumes: Int
        var outcome: Job.Outcome?
        /// Its pauses, the last one open while it is paused (absent in records of older versions).
        var pauses: [RecordingManifest.Pause]? = nil
        /// Its `JobLifecycle` state (`LocalJobStore`; absent in records of older versions).
        var state: String? = nil
    }

    let folder: URL

    init(stateDirectory: URL) throws(ServeError) {
        folder = stateDirectory.appendingPathComponent("jobs")
        for dir in [stateDirectory, folder] {
            if mkdir(dir.path, 0o700) != 0, errno != EEXIST {
                throw ServeError("cannot create the state folder \(dir.path) (\(String(cString: strerror(errno)))): check --state-dir")
            }
        }
        let probe = folder.appendingPathComponent(".write-check")
        do { try Self.write(Data(), to: probe) } catch { throw ServeError("cannot write in \(folder.path): check --state-dir and its permissions") }
        unlink(probe.path)
    }

    func save(_ record: Record) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        try Self.write(try encoder.encode(record), to: folder.appendingPathComponent("\(record.id).json"))
    }

    /// Removes a job's record (its recordings are elsewhere and stay).
    func remove(_ id: String) {
        unlink(folder.appendingPathComponent("\(id).json").path)
    }

    /// Every job on disk; a file that does not read is logged and left where it is.
    func load(logger: Logger) -> [Record] {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.filter { $0.hasSuffix(".json") && !$0.hasPrefix(".") }.sorted().compactMap { name in
            do { return try decoder.decode(Record.self, from: Data(contentsOf: folder.appendingPathComponent(name))) } catch {
                logger.error("state: cannot read job \(name) (\(error)); it is left as it is")
                return nil
            }
        }
    }

    /// A temporary 0600 file renamed over `file`: a crash never leaves half a job.
    private static func write(_ data: Data, to file: URL) throws {
        let tmp = file.deletingLastPathComponent().appendingPathComponent(".\(file.lastPathComponent).tmp")
        let fd = open(tmp.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw CocoaError(.fileWriteNoPermission) }
        let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        try handle.write(contentsOf: data)
        try handle.synchronize()
        try handle.close()
        guard rename(tmp.path, file.path) == 0 else { throw CocoaError(.fileWriteUnknown) }
    }
}

/// The service cannot start as configured; the message says what to change.
public struct ServeError: Error, CustomStringConvertible, Sendable {
    public let description: String
    init(_ description: String) { self.description = description }
}
