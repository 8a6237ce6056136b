// `stat` is defined, for MemberImportVisibility, by the first module that included sys/stat.h;
// since PostgresNIO joined Service that is CDispatch (see Roots.swift).
import Dispatch
internal import CDispatch
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The file operations a request needs, below a `Root`'s descriptor and never through a
/// symlink: every component opened with `openat(…, O_NOFOLLOW)`, files opened `O_NONBLOCK`
/// (a FIFO is refused at once, not waited on) and checked to be regular before use, the mix
/// created with `O_EXCL` (an existing file is never truncated).
///
/// They run on a Dispatch queue, never on Swift's cooperative pool (2 threads here): a file
/// system that hangs (NFS, FUSE) must not stop the service from answering.
enum RootFiles {
    /// Opens the folder `parts` below `root`, each component a real folder (no symlink);
    /// missing ones are created 0700 when `create`. The caller closes the descriptor.
    static func folder(_ parts: ArraySlice<String>, in root: Root, field: String, create: Bool) throws(RequestProblem) -> Int32 {
        var fd = dup(root.fd)
        guard fd >= 0 else { throw failure(errno, field: field, shown: root.path) }
        var walked = root.path
        for part in parts {
            walked = walked == "/" ? "/" + part : walked + "/" + part
            var next = openat(fd, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            if next < 0, errno == ENOENT, create {
                if mkdirat(fd, part, 0o700) != 0, errno != EEXIST {
                    let code = errno
                    close(fd)
                    throw failure(code, field: field, shown: walked)
                }
                next = openat(fd, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            }
            let code = errno
            close(fd)
            guard next >= 0 else { throw failure(code, field: field, shown: walked, folder: true) }
            fd = next
        }
        return fd
    }

    /// A regular file below `root`, opened for reading (`O_NONBLOCK`: a FIFO does not block
    /// the open). Anything else (folder, FIFO, device, socket, symlink) is refused.
    static func openRegular(_ parts: [String], in root: Root, field: String) throws(RequestProblem) -> Int32 {
        guard let name = parts.last else { throw .field(field, "names a folder, not a file") }
        let dir = try folder(parts.dropLast(), in: root, field: field, create: false)
        defer { close(dir) }
        let shown = root.canonical(parts)
        var info = stat()
        // Looked at before it is opened: opening a device may already do something.
        guard fstatat(dir, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else { throw failure(errno, field: field, shown: shown) }
        guard info.st_mode & S_IFMT == S_IFREG else { throw notRegular(info.st_mode, field: field, shown: shown) }
        let fd = openat(dir, name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { throw failure(errno, field: field, shown: shown) }
        // And again once open: it may have been replaced in between.
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            close(fd)
            throw notRegular(info.st_mode, field: field, shown: shown)
        }
        return fd
    }

    /// A recording's outputs, each folder held open as the walk found it: the recorder writes
    /// through these descriptors (`/proc/self/fd/N`), never by name, so a path component swapped
    /// for a symlink after this check cannot lead it out of the root.
    struct Outputs {
        /// The recording's folder (`out`), and the folder holding `mix`; the caller owns both.
        var folder: Int32
        var mixFolder: Int32?
        /// Whether the mix was created here (removed again should the job not start).
        var createdMix: Bool
    }

    /// A fresh recording's outputs: `out` created (0700) or found empty, and the mix created
    /// empty with `O_EXCL`. A resumed recording's folder holds its earlier files: only walked.
    static func prepareOutputs(out: [String], mix: [String]?, in root: Root, fresh: Bool) throws(RequestProblem) -> Outputs {
        let dir = try folder(out[...], in: root, field: "out", create: true)
        var kept = false
        defer { if !kept { close(dir) } }
        if fresh, try !isEmpty(dir, field: "out") {
            throw RequestProblem(status: 409, message: "out: \(root.canonical(out)) already holds files: a new recording takes a new or empty folder (the service never overwrites a file)")
        }
        guard let mix, let name = mix.last else {
            kept = true
            return Outputs(folder: dir, mixFolder: nil, createdMix: false)
        }
        let parent = try folder(mix.dropLast(), in: root, field: "mix", create: true)
        guard fresh else {
            kept = true
            return Outputs(folder: dir, mixFolder: parent, createdMix: false)
        }
        let fd = openat(parent, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            let code = errno
            close(parent)
            if code == EEXIST {
                throw RequestProblem(status: 409, message: "mix: \(root.canonical(mix)) already exists: the service never overwrites a file")
            }
            throw failure(code, field: "mix", shown: root.canonical(mix))
        }
        close(fd)
        kept = true
        return Outputs(folder: dir, mixFolder: parent, createdMix: true)
    }

    /// The whole of the regular file open at `fd`, if it is one of at most `maxBytes`.
    static func readRegular(fd: Int32, maxBytes: Int) -> [UInt8]? {
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size <= maxBytes else { return nil }
        var bytes = [UInt8](repeating: 0, count: maxBytes + 1)
        var count = 0
        while count < bytes.count {
            let n = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + count, $0.count - count, off_t(count)) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { return nil }
            if n == 0 { break }
            count += n
        }
        return count <= maxBytes ? Array(bytes[..<count]) : nil
    }

    private static func isEmpty(_ dir: Int32, field: String) throws(RequestProblem) -> Bool {
        let copy = dup(dir)
        guard copy >= 0, let stream = fdopendir(copy) else {
            if copy >= 0 { close(copy) }
            throw .field(field, "cannot list the folder (\(String(cString: strerror(errno))))")
        }
        defer { closedir(stream) }
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            // The marker of a folder whose earlier recording went to the store is no file of it.
            if name != "." && name != ".." && name != FolderMarker.name { return false }
        }
        return true
    }

    private static func notRegular(_ mode: mode_t, field: String, shown: String) -> RequestProblem {
        let what = switch mode & S_IFMT {
        case S_IFDIR: "a folder"
        case S_IFIFO: "a FIFO"
        case S_IFCHR, S_IFBLK: "a device"
        case S_IFSOCK: "a socket"
        case S_IFLNK: "a symlink (never followed)"
        default: "not a regular file"
        }
        return RequestProblem(status: 400, message: "\(field): \(shown) is \(what); give a regular file")
    }

    private static func failure(_ code: Int32, field: String, shown: String, folder: Bool = false) -> RequestProblem {
        switch code {
        case ELOOP, ENOTDIR:
            RequestProblem(status: 403, message: folder
                ? "\(field): \(shown) is a symlink or not a folder: nothing below the root is followed out of it"
                : "\(field): \(shown) is a symlink: never followed")
        case ENOENT: .field(field, "\(shown) does not exist")
        case EACCES, EPERM: RequestProblem(status: 403, message: "\(field): \(shown): permission denied")
        default: .field(field, "\(shown): \(String(cString: strerror(code)))")
        }
    }
}
