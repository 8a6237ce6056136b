#if canImport(Glibc)
public import Glibc
#elseif canImport(Darwin)
public import Darwin
#endif

/// Files that hold secrets (tokens, keys, credentials, key logs): read and written one way
/// everywhere. A secret is read only from a regular file that group and others cannot access,
/// opened without blocking (a FIFO at the path cannot hang the caller) and bounded in size;
/// one is written only to a new file created 0600.
public enum PrivateFile {
    /// What was read, and the file's `stat` at the time (for callers that watch it change).
    public struct Contents: Sendable {
        public let bytes: [UInt8]
        public let info: stat
    }

    /// Reads `path` (`what` names it in errors: "the token file", "--janus-credentials").
    /// `followSymlinks: false` refuses a symlink at the path itself.
    public static func read(_ path: String, what: String, maxBytes: Int, followSymlinks: Bool = true) throws(PrivateFileError) -> Contents {
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | (followSymlinks ? 0 : O_NOFOLLOW))
        guard fd >= 0 else { throw PrivateFileError(path, what, .cannotOpen(errorText())) }
        defer { close(fd) }
        let info = try check(fd: fd, path: path, what: what)
        guard Int(info.st_size) <= maxBytes else { throw PrivateFileError(path, what, .tooLarge(maxBytes)) }
        var bytes = [UInt8](repeating: 0, count: maxBytes + 1)
        var total = 0
        while total < bytes.count {
            let n = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + total, $0.count - total, off_t(total)) }
            if n < 0, errno == EINTR { continue }
            guard n >= 0 else { throw PrivateFileError(path, what, .cannotRead(errorText())) }
            if n == 0 { break }
            total += n
        }
        // The file grew after fstat: still bounded.
        guard total <= maxBytes else { throw PrivateFileError(path, what, .tooLarge(maxBytes)) }
        return Contents(bytes: Array(bytes[..<total]), info: info)
    }

    /// Checks an open file: a regular file (`mustOwn`: of this user) no one else can access.
    @discardableResult
    public static func check(fd: Int32, path: String, what: String, mustOwn: Bool = false) throws(PrivateFileError) -> stat {
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { throw PrivateFileError(path, what, .notRegular) }
        if mustOwn, info.st_uid != geteuid() { throw PrivateFileError(path, what, .notOwned) }
        guard info.st_mode & 0o077 == 0 else { throw PrivateFileError(path, what, .openToOthers(octal(info.st_mode))) }
        return info
    }

    /// Opens `path` for appending, creating it 0600; never through a symlink, and only a file
    /// of this user's that no one else can access. The caller closes the descriptor.
    public static func openForAppend(_ path: String, what: String) throws(PrivateFileError) -> Int32 {
        let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0o600)
        guard fd >= 0 else { throw PrivateFileError(path, what, .cannotOpen(errorText())) }
        do { try check(fd: fd, path: path, what: what, mustOwn: true) } catch {
            close(fd)
            throw error
        }
        return fd
    }

    /// Writes `contents` to a new file created 0600 and synced; never over an existing file.
    public static func createNew(_ path: String, what: String, contents: [UInt8]) throws(PrivateFileError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw PrivateFileError(path, what, errno == EEXIST ? .exists : .cannotWrite(errorText())) }
        defer { close(fd) }
        var done = 0
        while done < contents.count {
            let n = contents.withUnsafeBytes { write(fd, $0.baseAddress! + done, $0.count - done) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { throw PrivateFileError(path, what, .cannotWrite(errorText())) }
            done += n
        }
        guard fsync(fd) == 0 else { throw PrivateFileError(path, what, .cannotWrite(errorText())) }
    }

    /// The file's mode in octal if group or others can access it, else nil (for warnings
    /// about a file a command only reads, such as a call key given on the command line).
    public static func openToOthers(_ path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & 0o077 != 0 else { return nil }
        return octal(info.st_mode)
    }

    static func octal(_ mode: mode_t) -> String { String(mode & 0o777, radix: 8) }
    static func errorText() -> String { String(cString: strerror(errno)) }
}

/// Why a secret file was refused, naming the file and what to do.
public struct PrivateFileError: Error, CustomStringConvertible, Equatable, Sendable {
    public enum Reason: Equatable, Sendable {
        case cannotOpen(String)
        case notRegular
        case notOwned
        case tooLarge(Int)
        case openToOthers(String)
        case cannotRead(String)
        case exists
        case cannotWrite(String)
    }

    public let path: String
    public let what: String
    public let reason: Reason

    init(_ path: String, _ what: String, _ reason: Reason) { (self.path, self.what, self.reason) = (path, what, reason) }

    /// The file could not be read at all (missing, not a file, too large), as opposed to a file
    /// that is there but must be fixed (its mode).
    public var unreadable: Bool {
        switch reason {
        case .cannotOpen, .notRegular, .tooLarge, .cannotRead: true
        default: false
        }
    }

    public var description: String {
        switch reason {
        case .cannotOpen(let why): "cannot open \(what) \(path): \(why)"
        case .notRegular: "\(what) \(path) is not a regular file"
        case .notOwned: "\(what) \(path) is not owned by this user: give a new path"
        case .tooLarge(let max): "\(what) \(path) is larger than \(max) bytes"
        case .openToOthers(let mode): "\(what) \(path) is open to other users (mode \(mode)) and holds secrets: chmod 600 it"
        case .cannotRead(let why): "cannot read \(what) \(path): \(why)"
        case .exists: "\(what) \(path) exists already: give a new path"
        case .cannotWrite(let why): "cannot write \(what) \(path): \(why)"
        }
    }
}
