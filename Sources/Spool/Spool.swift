#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
public import Foundation

/// Work that must survive a restart, kept in a directory: one JSON file per entry, named by its
/// id. An entry is written to a temporary file, synced, then renamed over the old one, and the
/// directory synced, so a crash leaves either the old entry or the new one, never half of one.
/// The directory is the only state: a new `Spool` on the same path carries on where the last left.
public struct Spool<Entry: Codable & Sendable>: Sendable {
    public let directory: URL
    /// Names the spool in errors ("the upload queue").
    public let what: String

    public init(directory: URL, what: String) throws(SpoolError) {
        self.directory = directory
        self.what = what
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw SpoolError(what, directory.path, .cannotCreate("\(error)"))
        }
        // Temporary files of writes a crash interrupted. Only here, at the start: removed in
        // `load`, they would race with a `put` of this process between its write and rename.
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? [] where name.hasPrefix(".") && name.hasSuffix(".tmp") {
            unlink(directory.appendingPathComponent(name).path)
        }
    }

    /// Whether `id` can name an entry: a plain file name, nothing a path could hide in.
    public static func isValid(id: String) -> Bool {
        !id.isEmpty && id.count <= 200 && !id.hasPrefix(".")
            && id.unicodeScalars.allSatisfy { CharacterSet.alphanumerics.contains($0) && $0.isASCII || "-_.".unicodeScalars.contains($0) }
    }

    /// Writes `entry` under `id`, replacing the one there.
    public func put(_ id: String, _ entry: Entry) throws(SpoolError) {
        guard Self.isValid(id: id) else { throw SpoolError(what, id, .invalidID) }
        let bytes: Data
        do { bytes = try JSONEncoder().encode(entry) } catch { throw SpoolError(what, id, .cannotWrite("\(error)")) }
        let final = path(id), temporary = directory.appendingPathComponent(".\(id).\(UUID().uuidString.prefix(8)).tmp").path
        do throws(SpoolError) {
            try Self.writeSynced(temporary, bytes)
            guard rename(temporary, final) == 0 else { throw SpoolError(what, final, .cannotWrite(Self.errorText())) }
        } catch {
            unlink(temporary)
            throw error
        }
        Self.syncDirectory(directory.path)
    }

    /// Adds `entry` unless an entry with `id` is there already (a producer that repeats itself
    /// after a crash adds nothing twice). Returns whether it was added.
    @discardableResult
    public func add(_ id: String, _ entry: Entry) throws(SpoolError) -> Bool {
        guard Self.isValid(id: id) else { throw SpoolError(what, id, .invalidID) }
        if FileManager.default.fileExists(atPath: path(id)) { return false }
        try put(id, entry)
        return true
    }

    public func get(_ id: String) throws(SpoolError) -> Entry? {
        guard Self.isValid(id: id), let data = FileManager.default.contents(atPath: path(id)) else { return nil }
        do { return try JSONDecoder().decode(Entry.self, from: data) } catch { throw SpoolError(what, path(id), .unreadable("\(error)")) }
    }

    public func remove(_ id: String) throws(SpoolError) {
        guard Self.isValid(id: id) else { throw SpoolError(what, id, .invalidID) }
        guard unlink(path(id)) == 0 || errno == ENOENT else { throw SpoolError(what, path(id), .cannotWrite(Self.errorText())) }
        Self.syncDirectory(directory.path)
    }

    /// Every entry, by id. Temporary files (a `put` under way, or one a crash interrupted) are
    /// ignored; an entry that cannot be decoded is reported in `unreadable`, never deleted: a
    /// person decides.
    public func load() -> (entries: [(id: String, entry: Entry)], unreadable: [String]) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        var entries: [(id: String, entry: Entry)] = [], unreadable: [String] = []
        for name in names.sorted() {
            guard !name.hasPrefix("."), name.hasSuffix(".json") else { continue }
            let id = String(name.dropLast(5))
            do {
                if let entry = try get(id) { entries.append((id, entry)) }
            } catch {
                unreadable.append(name)
            }
        }
        return (entries, unreadable)
    }

    func path(_ id: String) -> String { directory.appendingPathComponent("\(id).json").path }

    static func writeSynced(_ path: String, _ bytes: Data) throws(SpoolError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw SpoolError("spool", path, .cannotWrite(errorText())) }
        defer { close(fd) }
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + done, $0.count - done) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { throw SpoolError("spool", path, .cannotWrite(errorText())) }
            done += n
        }
        guard fsync(fd) == 0 else { throw SpoolError("spool", path, .cannotWrite(errorText())) }
    }

    /// The rename is durable only once the directory itself is synced.
    static func syncDirectory(_ path: String) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        fsync(fd)
        close(fd)
    }

    static func errorText() -> String { String(cString: strerror(errno)) }
}

/// Why a spool could not be read or written, naming it and the path.
public struct SpoolError: Error, CustomStringConvertible, Sendable {
    enum Reason: Sendable {
        case cannotCreate(String), cannotWrite(String), unreadable(String), invalidID
    }

    let what: String, path: String, reason: Reason
    init(_ what: String, _ path: String, _ reason: Reason) { (self.what, self.path, self.reason) = (what, path, reason) }

    public var description: String {
        switch reason {
        case .cannotCreate(let why): "cannot create \(what) at \(path): \(why); check the state directory's owner and free space"
        case .cannotWrite(let why): "cannot write \(what) entry \(path): \(why); check the disk's free space"
        case .unreadable(let why): "\(what) entry \(path) cannot be read (\(why)); move it aside and look at it"
        case .invalidID: "\(what): \"\(path)\" cannot name an entry (letters, digits, - _ . only)"
        }
    }
}
