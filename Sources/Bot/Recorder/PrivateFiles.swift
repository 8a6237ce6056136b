import Foundation

/// Recordings are decrypted calls: every file the recorder writes is 0600 and every folder it
/// creates 0700, made so before the first byte is written (GStreamer's filesink would create
/// its file with the process umask, usually 0644).
enum PrivateFiles {
    static let fileMode: mode_t = 0o600
    static let folderMode: mode_t = 0o700

    /// Creates `folder` and any missing parent, each 0700; folders that exist keep their mode.
    /// Returns false if `folder` already existed.
    @discardableResult
    static func createFolder(_ folder: URL) throws(BotError) -> Bool {
        var path = ""
        var created = false
        for part in folder.standardizedFileURL.path.split(separator: "/") {
            path += "/" + part
            if mkdir(path, folderMode) == 0 {
                created = true
                continue
            }
            let code = errno
            guard code == EEXIST else {
                throw .output("cannot create the folder \(path) (\(reason(code))): check --out and the permissions above it")
            }
        }
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder.path, isDirectory: &isFolder), isFolder.boolValue else {
            throw .output("\(folder.path) is not a folder: choose another --out")
        }
        return created
    }

    /// Whether files can be created in `folder` (permissions alone do not say, for root or a
    /// read-only mount): creates one and removes it. `shown`: the folder as its errors name it.
    static func checkWritable(_ folder: URL, shown: URL? = nil) throws(BotError) {
        let probe = folder.appendingPathComponent(".sfubot-write-check-\(UUID().uuidString)")
        let fd = open(probe.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, fileMode)
        guard fd >= 0 else {
            let code = errno
            throw .output("cannot create files in \((shown ?? folder).path) (\(reason(code))): choose another --out or fix its permissions")
        }
        _ = close(fd)
        _ = unlink(probe.path)
    }

    /// Creates `file` empty and 0600 for a sink to write into (filesink's `fopen(…, "wb")` keeps
    /// the mode of a file that exists). An existing regular file is truncated and made 0600; a
    /// device such as /dev/null is opened and left as it is. `shown`: the file as its errors name it.
    static func create(_ file: URL, option: String = "output", shown: URL? = nil) throws(BotError) {
        let fd = open(file.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, fileMode)
        guard fd >= 0 else {
            let code = errno
            throw .output("cannot create \((shown ?? file).path) (\(reason(code))): check \(option) and its folder")
        }
        defer { _ = close(fd) }
        var info = stat()
        if fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, fchmod(fd, fileMode) != 0 {
            let code = errno
            throw .output("cannot make \((shown ?? file).path) private (\(reason(code)))")
        }
    }

    /// Writes `data` to `file` (created 0600, or truncated and made 0600).
    static func write(_ data: Data, to file: URL) throws {
        try create(file, option: "the folder")
        let handle = try FileHandle(forWritingTo: file)
        defer { try? handle.close() }
        try handle.write(contentsOf: data)
    }

    /// Whether others may read or enter `folder` (its mode gives group or others any right).
    static func isShared(_ folder: URL) -> Bool {
        var info = stat()
        return stat(folder.path, &info) == 0 && info.st_mode & 0o077 != 0
    }

    private static func reason(_ code: Int32) -> String { String(cString: strerror(code)) }
}
