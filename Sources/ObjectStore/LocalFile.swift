#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Foundation
import Crypto
import Locking

/// A local file read in pieces for an upload (a part at most in memory, 16 MiB for a single
/// PUT). Every open, read, hash and unlink runs on a Dispatch queue of its own, never on Swift's
/// cooperative pool (one thread per core: a disk or NFS that stalls there would stop the
/// service's timers, leases and API with it).
final class LocalFile: Sendable {
    let path: String
    private let fd: Int32

    private init(path: String, fd: Int32) { (self.path, self.fd) = (path, fd) }
    deinit { close(fd) }

    /// Opens `path` for reading: a regular file only. `O_NONBLOCK` makes a FIFO fail at once
    /// instead of waiting for a writer (regular files ignore it).
    static func open(_ path: String) async throws(ObjectStoreError) -> LocalFile {
        try await OffPool.run { () throws(ObjectStoreError) -> LocalFile in
            let fd = Glibc.open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
            guard fd >= 0 else { throw ObjectStoreError(.localFile("cannot open \(path): \(String(cString: strerror(errno)))")) }
            var info = stat()
            guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
                close(fd)
                throw ObjectStoreError(.localFile("\(path) is not a regular file; only regular files are uploaded"))
            }
            return LocalFile(path: path, fd: fd)
        }
    }

    /// `count` bytes from `offset`, and their MD5 (for Content-MD5 and the ETag check).
    func read(at offset: Int, count: Int) async throws(ObjectStoreError) -> (bytes: [UInt8], md5: Data) {
        try await OffPool.run { [self] () throws(ObjectStoreError) -> ([UInt8], Data) in
            var bytes = [UInt8](repeating: 0, count: count), done = 0
            while done < count {
                let n = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + done, count - done, off_t(offset + done)) }
                if n < 0, errno == EINTR { continue }
                guard n >= 0 else { throw ObjectStoreError(.localFile("cannot read \(path): \(String(cString: strerror(errno)))")) }
                guard n > 0 else { throw ObjectStoreError(.localFile("\(path) changed while it was uploaded (short read)")) }
                done += n
            }
            return (bytes, Data(Insecure.MD5.hash(data: bytes)))
        }
    }

    /// The file's size and hex SHA-256, read 1 MiB at a time.
    func sizeAndSHA256() async throws(ObjectStoreError) -> (Int, String) {
        try await OffPool.run { [self] () throws(ObjectStoreError) -> (Int, String) in
            var hash = SHA256(), size = 0
            var chunk = [UInt8](repeating: 0, count: 1 << 20)
            while true {
                let n = chunk.withUnsafeMutableBytes { pread(fd, $0.baseAddress!, $0.count, off_t(size)) }
                if n < 0, errno == EINTR { continue }
                guard n >= 0 else { throw ObjectStoreError(.localFile("cannot read \(path): \(String(cString: strerror(errno)))")) }
                if n == 0 { break }
                hash.update(data: chunk[0..<n])
                size += n
            }
            return (size, SigV4.hex(hash.finalize()))
        }
    }
}
