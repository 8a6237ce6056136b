import FrameCrypto
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A request's `key.file`, read only if it is a regular file of a key's size. The path comes
/// from the client: without this check `{"file": "/dev/zero"}` (or a FIFO, or a huge file)
/// made the job manager read without end, holding every other request.
enum KeyFile {
    /// A key file is 32 raw bytes or 64 hex characters, perhaps with a line end.
    static let maxBytes = 4096

    static func read(_ path: String) throws(RequestProblem) -> CallKey {
        let problem = RequestProblem.field("key.file", "\(path) is not a readable key file (32 raw bytes or 64 hex characters)")
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size <= maxBytes else { throw problem }
        do { return try CallKey(contentsOfFile: path) } catch { throw problem }
    }
}
