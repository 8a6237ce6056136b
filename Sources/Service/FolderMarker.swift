import Bot
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A recording folder's identity across instances: `.sfubot-folder` holds a random id, made by
/// the first run that finds none. Owners on shared storage read the same id; owners each on
/// its own disk make their own, so the cluster knows which folders a recording's files are in
/// and who can upload each (docs/cluster.md, uploads). Read and made through the held folder,
/// off the pool.
enum FolderMarker {
    static let name = ".sfubot-folder"

    static func id(of folder: RecordingFolder) throws(RequestProblem) -> String {
        let path = folder.access.appendingPathComponent(name).path
        for _ in 0..<2 {
            if let id = read(path) { return id }
            let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            if fd < 0 {
                // Another run made it in between: read its id.
                if errno == EEXIST { continue }
                throw RequestProblem(status: 500, message: "cannot write \(folder.shown.path)/\(name): \(String(cString: strerror(errno)))")
            }
            let id = UUID().uuidString.lowercased()
            let bytes = Array((id + "\n").utf8)
            let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            let synced = fsync(fd) == 0
            close(fd)
            guard written == bytes.count, synced else {
                unlink(path)
                throw RequestProblem(status: 500, message: "cannot write \(folder.shown.path)/\(name): \(String(cString: strerror(errno)))")
            }
            return id
        }
        throw RequestProblem(status: 500, message: "\(folder.shown.path)/\(name) cannot be read")
    }

    /// The id of the folder at `path` (as shown), if it has a marker; never makes one.
    static func existing(in path: String) -> String? {
        read(URL(fileURLWithPath: path).appendingPathComponent(name).path)
    }

    private static func read(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 64)
        let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        guard n > 0 else { return nil }
        let id = String(decoding: buffer.prefix(n), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return id.isEmpty ? nil : id
    }
}
