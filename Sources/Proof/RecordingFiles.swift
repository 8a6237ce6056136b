#if canImport(Glibc)
import Glibc
#endif

/// The files of a recording's folder: the one listing the signed proof (RecordingProof) names
/// and serve's uploads send (JobPublishing), so a bucket never lacks a file the proof signs nor
/// holds one it does not. Read through a descriptor of the folder, never by its path: a folder
/// renamed or replaced after it was opened is not followed. Blocking: call it off Swift's
/// cooperative pool (`OffPool.run`) or from a synchronous command.
public enum RecordingFiles {
    public struct File: Sendable, Equatable {
        /// Its name in the folder.
        public let name: String
        public let size: Int
        /// Hex SHA-256 of all of it.
        public let sha256: String
    }

    /// The folder cannot be opened or listed, or one of its files read; the message names the
    /// folder or file and what the system said.
    public struct Failure: Error, Equatable, CustomStringConvertible {
        public let description: String
        init(_ what: String, _ code: Int32) { description = "\(what): \(String(cString: strerror(code)))" }
        init(_ description: String) { self.description = description }
    }

    /// The proof's own files: its checkpoints and the manifest that carries its signatures.
    /// Uploaded with the recording, never in the list the proof signs (it cannot sign itself).
    public static let proofOwn: Set<String> = ["manifest.json", ProofChain.fileName]

    /// Whether `name` is one of a recording's files. Hidden ones are the recorder's own, the
    /// same everywhere: serve's folder marker, the manifest's reserve, a manifest or merge
    /// (`.partial`) it was killed writing; never the recording's.
    public static func isListed(_ name: String) -> Bool { !name.hasPrefix(".") && !name.contains("/") }

    /// Opens the folder at `path` (`O_DIRECTORY | O_NOFOLLOW`: a symbolic link is refused), for
    /// a caller that only has its path (serve after a restart): listed and read through this
    /// one descriptor, what is listed is what is hashed even if the path is swapped meanwhile.
    /// The caller closes it.
    public static func open(_ path: String) throws(Failure) -> Int32 {
        let fd = Glibc.open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { throw Failure("cannot open the folder \(path)", errno) }
        return fd
    }

    /// The names of the regular files in the folder `folder` (a descriptor), sorted; subfolders,
    /// symbolic links and hidden files are not the recording's.
    public static func names(in folder: Int32) throws(Failure) -> [String] {
        // A description of its own: reading the directory moves its offset, the held one's stays.
        let own = openat(folder, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard own >= 0, let stream = fdopendir(own) else {
            let code = errno
            if own >= 0 { close(own) }
            throw Failure("cannot list the recording's folder", code)
        }
        defer { closedir(stream) }
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            var st = stat()
            guard isListed(name), fstatat(own, name, &st, AT_SYMLINK_NOFOLLOW) == 0, st.st_mode & S_IFMT == S_IFREG else { continue }
            names.append(name)
        }
        return names.sorted()
    }

    /// `name` in the folder `folder`, read through it (a symbolic link is not followed).
    public static func file(_ name: String, in folder: Int32) throws(Failure) -> File {
        let fd = openat(folder, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw Failure("cannot open \(name)", errno) }
        defer { close(fd) }
        do {
            let d = try FileDigest.of(descriptor: fd)
            return File(name: name, size: d.size, sha256: d.sha256)
        } catch {
            switch error {
            case .notRegular: throw Failure("\(name) is not a regular file")
            case .missing: throw Failure("cannot read \(name)", ENOENT)
            case .unreadable(let why): throw Failure("cannot read \(name): \(why)")
            }
        }
    }

    /// Every file of the folder `folder` but `skipped`, hashed; a file gone between the listing
    /// and its read is left out (its recording no longer has it).
    public static func files(in folder: Int32, except skipped: Set<String> = []) throws(Failure) -> [File] {
        var out: [File] = []
        for name in try names(in: folder) where !skipped.contains(name) {
            do { out.append(try file(name, in: folder)) } catch {
                var st = stat()
                if fstatat(folder, name, &st, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT { continue }
                throw error
            }
        }
        return out
    }
}
