// `stat` is defined, for MemberImportVisibility, by the first module that included sys/stat.h;
// since PostgresNIO joined Service that is CDispatch.
import Dispatch
internal import CDispatch
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A folder the service's jobs are confined to: `--output-root` (a recording's `out` and `mix`)
/// or `--media-root` (a playback's `file`, a `key.file`). Opened once at start; every path a
/// request names is relative to it (or absolute and inside it), holds no `..`, and is walked
/// below the root's descriptor with `O_NOFOLLOW` (RootFiles.swift): a symlink anywhere below
/// the root is refused, never followed, so nothing outside the root is ever opened.
public struct Root: Sendable {
    /// Which request fields name paths in this root, for the messages.
    public enum Use: String, Sendable { case output = "--output-root", media = "--media-root" }

    public let use: Use
    /// The root as resolved at start (symlinks in it resolved once, by the operator's choice).
    public let path: String
    /// The root as given, standardized: an absolute path a client gives may start with either.
    let given: String
    /// Kept open for the process's life: every walk starts here.
    let fd: Int32

    /// Opens `folder` (created 0700 if missing when `create`), or says why not.
    public init(_ folder: String, use: Use, create: Bool) throws(ServeError) {
        self.use = use
        let standardized = URL(fileURLWithPath: folder).standardizedFileURL.path
        if create, mkdir(standardized, 0o700) != 0, errno != EEXIST {
            throw ServeError("cannot create \(use.rawValue) \(standardized) (\(String(cString: strerror(errno))))")
        }
        let fd = open(standardized, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw ServeError("cannot open \(use.rawValue) \(standardized) (\(String(cString: strerror(errno)))): it must be a folder") }
        guard let real = realpath(standardized, nil) else {
            close(fd)
            throw ServeError("cannot resolve \(use.rawValue) \(standardized)")
        }
        path = String(cString: real)
        free(real)
        given = standardized
        self.fd = fd
    }

    /// Why this root is weaker than it looks, if it is. Jobs read and write through the
    /// descriptors their checks opened, but two things still go by name: the files inside a
    /// recording's folder are created by name within it, and `--storage` uploads and deletes a
    /// finished recording's files by their paths. Someone else who may write in the root could
    /// put a symlink there; roots only the service's user can write in leave no one who could.
    public var weakness: String? {
        var info = stat()
        guard fstat(fd, &info) == 0 else { return nil }
        let byName = "jobs write through the folders their checks opened, but files inside a folder others can write in, and uploads of finished recordings (--storage), still go by name"
        if info.st_mode & 0o022 != 0 {
            return "\(use.rawValue) \(path) is writable by its group or others: \(byName); make it writable by the service's user only (chmod go-w)"
        }
        if info.st_uid != geteuid() {
            return "\(use.rawValue) \(path) belongs to another user: \(byName); give the service a root of its own"
        }
        return nil
    }

    /// The path's components below the root: `field` names the request field for the refusal.
    /// Pure: no file is touched. Refuses `..`, NUL, an absolute path outside the root, and
    /// the root itself unless `rootAllowed`.
    func components(_ value: String, field: String, rootAllowed: Bool = false) throws(RequestProblem) -> [String] {
        guard !value.isEmpty, !value.utf8.contains(0) else { throw .field(field, "must be a path relative to \(use.rawValue) (or absolute inside it)") }
        var rest = Substring(value)
        if value.hasPrefix("/") {
            var inside: Substring?
            for prefix in [path, given] where prefix != "/" {
                if value == prefix { inside = "" } else if value.hasPrefix(prefix + "/") { inside = value.dropFirst(prefix.count + 1) }
                if inside != nil { break }
            }
            if path == "/" || given == "/" { inside = inside ?? value.dropFirst() }
            guard let inside else { throw RequestProblem(status: 403, message: "\(field): \(value) is outside \(use.rawValue); give a path inside it") }
            rest = inside
        }
        let parts = rest.split(separator: "/").filter { $0 != "." }.map(String.init)
        guard !parts.contains("..") else { throw RequestProblem(status: 403, message: "\(field): \"..\" is not allowed in a path") }
        guard rootAllowed || !parts.isEmpty else { throw .field(field, "names \(use.rawValue) itself; give a path inside it") }
        return parts
    }

    /// The absolute path of `parts` below the root, as no symlink can change it once the
    /// walk (RootFiles) has checked every component is a real folder or file.
    func canonical(_ parts: [String]) -> String {
        parts.isEmpty ? path : (path == "/" ? "" : path) + "/" + parts.joined(separator: "/")
    }
}

/// Both roots of a running service.
public struct Roots: Sendable {
    public let output: Root
    public let media: Root

    public init(output: Root, media: Root) {
        self.output = output
        self.media = media
    }

    /// `--output-root` and `--media-root`, or else `recordings/` and `media/` in the state
    /// folder; with neither a service could write anywhere its user can, so it does not start.
    public static func configured(output: String?, media: String?, stateDirectory: String?) throws(ServeError) -> Roots {
        func resolve(_ given: String?, _ sub: String, _ use: Root.Use) throws(ServeError) -> Root {
            // Only the last folder is made: a mistyped parent is an error, not a new tree.
            if let given { return try Root(given, use: use, create: true) }
            guard let stateDirectory else {
                throw ServeError("give --output-root and --media-root (or --state-dir, whose recordings/ and media/ become them): jobs may only use files below them")
            }
            if mkdir(stateDirectory, 0o700) != 0, errno != EEXIST {
                throw ServeError("cannot create the state folder \(stateDirectory) (\(String(cString: strerror(errno)))): check --state-dir")
            }
            return try Root(URL(fileURLWithPath: stateDirectory).appendingPathComponent(sub).path, use: use, create: true)
        }
        return Roots(output: try resolve(output, "recordings", .output), media: try resolve(media, "media", .media))
    }
}

/// Where a job's paths lead, resolved lexically (before any file is touched): what it claims
/// in the output root (its folder and mix) and what it reads in the media root.
struct JobPaths: Sendable, Equatable {
    var out: [String]?
    var mix: [String]?
    var file: [String]?
    var keyFile: [String]?

    init(_ spec: JobSpec, roots: Roots) throws(RequestProblem) {
        out = try spec.out.map { v throws(RequestProblem) in try roots.output.components(v, field: "out") }
        mix = try spec.mix.map { v throws(RequestProblem) in try roots.output.components(v, field: "mix") }
        file = try spec.file.map { v throws(RequestProblem) in try roots.media.components(v, field: "file") }
        if case .file(let path) = spec.key { keyFile = try roots.media.components(path, field: "key.file") }
    }

    /// The output paths this job writes below: no other active job's may lie in, on or over them.
    func claims(_ roots: Roots) -> [String] { [out, mix].compactMap { $0.map(roots.output.canonical) } }

    /// The spec with every path canonical (absolute, below its root): what the job runs with and
    /// what is persisted.
    func canonicalSpec(_ spec: JobSpec, roots: Roots) -> JobSpec {
        var s = spec
        s.out = out.map(roots.output.canonical)
        s.mix = mix.map(roots.output.canonical)
        s.file = file.map(roots.media.canonical)
        if let keyFile { s.key = .file(roots.media.canonical(keyFile)) }
        return s
    }

    /// The spec with every path relative to its root: what `--database` stores, so that each
    /// instance resolves it below its own roots (each machine may have its own disk).
    func rootRelativeSpec(_ spec: JobSpec) -> JobSpec {
        func relative(_ parts: [String]) -> String { parts.joined(separator: "/") }
        var s = spec
        s.out = out.map(relative)
        s.mix = mix.map(relative)
        s.file = file.map(relative)
        if let keyFile { s.key = .file(relative(keyFile)) }
        return s
    }

    /// Whether two canonical paths are one, or one lies inside the other.
    static func overlap(_ a: String, _ b: String) -> Bool {
        a == b || a.hasPrefix(b + "/") || b.hasPrefix(a + "/")
    }
}
