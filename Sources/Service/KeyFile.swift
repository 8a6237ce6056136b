#if canImport(Glibc)
import Glibc
#endif
import FrameCrypto
import Foundation

/// A request's `key.file`, read only if it is a regular file of a key's size. The path comes
/// from the client: without this check `{"file": "/dev/zero"}` (or a FIFO, or a huge file)
/// made the job manager read without end, holding every other request. The service reads it
/// from a descriptor `RootFiles.openRegular` opened below `--media-root`.
enum KeyFile {
    /// A key file is 32 raw bytes or 64 hex characters, perhaps with a line end.
    static let maxBytes = 4096

    /// Opens `path` without blocking (a FIFO is refused, not waited on) and reads it.
    static func read(_ path: String) throws(RequestProblem) -> CallKey {
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw problem(path) }
        defer { close(fd) }
        return try read(fd: fd, shown: path)
    }

    /// The key in the regular file open at `fd` (left open).
    static func read(fd: Int32, shown: String) throws(RequestProblem) -> CallKey {
        guard let data = RootFiles.readRegular(fd: fd, maxBytes: maxBytes) else { throw problem(shown) }
        do {
            if data.count == 32 { return try CallKey(bytes: data) }
            return try CallKey(hex: String(decoding: data, as: UTF8.self))
        } catch { throw problem(shown) }
    }

    /// Key material of a format whose frames name their key, in the regular file open at
    /// `fd`: hex text if it reads as such, else its raw bytes (as the CLI's `--key-file`).
    static func material(fd: Int32, shown: String) throws(RequestProblem) -> KeyMaterial {
        guard let data = RootFiles.readRegular(fd: fd, maxBytes: maxBytes) else { throw problem(shown) }
        if let m = try? KeyMaterial(hex: String(decoding: data, as: UTF8.self)) { return m }
        do { return try KeyMaterial(Array(data)) } catch {
            throw .field("key.file", "\(shown) holds \(data.count) bytes; key material is 1 to \(KeyMaterial.maxCount) bytes (or their hex)")
        }
    }

    private static func problem(_ shown: String) -> RequestProblem {
        .field("key.file", "\(shown) is not a readable key file (32 raw bytes or 64 hex characters)")
    }
}
