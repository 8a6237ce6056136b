public import Foundation
import Crypto

/// SHA-256 and size of a file, or of its first `limit` bytes, read in 1 MiB pieces. Blocking:
/// call it from a thread of its own (`OffPool.run`) or a synchronous command.
public enum FileDigest {
    public struct Result: Sendable, Equatable {
        public let size: Int
        /// Of the bytes read: the whole file, or its first `limit` bytes.
        public let sha256: String
        public let hashed: Int
    }

    public enum Failure: Error, Equatable { case missing, notRegular, unreadable(String) }

    public static func of(_ url: URL, limit: Int? = nil) throws(Failure) -> Result {
        let fd = open(url.path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw errno == ENOENT ? .missing : .unreadable(String(cString: strerror(errno))) }
        defer { close(fd) }
        return try of(descriptor: fd, limit: limit)
    }

    /// Of the file open at `fd` (not closed), read from where it is (a fresh descriptor: its start).
    public static func of(descriptor fd: Int32, limit: Int? = nil) throws(Failure) -> Result {
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG else { throw .notRegular }
        let size = Int(st.st_size), want = min(limit ?? size, size)
        var hasher = SHA256()
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var done = 0
        while done < want {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress!, min($0.count, want - done)) }
            guard n > 0 else { break }
            hasher.update(data: buffer[0..<n])
            done += n
        }
        return Result(size: size, sha256: Hex.string(hasher.finalize()), hashed: done)
    }
}
