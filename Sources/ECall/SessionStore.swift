import Foundation

/// The session file: tokens and ids, written 0600 by rename so a reader never sees half of it.
public struct SessionStore: Sendable {
    public let path: String

    public init(path: String) { self.path = path }

    public func load() throws(ECallError) -> SessionState? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        guard let data = FileManager.default.contents(atPath: path) else { throw .sessionFile("cannot read \(path)") }
        do { return try JSONDecoder().decode(SessionState.self, from: data) } catch {
            throw .sessionFile("\(path) is not an sfubot session: delete it and log in again")
        }
    }

    public func save(_ state: SessionState) throws(ECallError) {
        let temporary = path + ".tmp-\(getpid())"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .sessionFile("cannot create \(temporary): \(String(cString: strerror(errno)))") }
        let bytes = (try? JSONEncoder().encode(state)).map(Array.init) ?? []
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd) == 0
        close(fd)
        guard written == bytes.count, synced, rename(temporary, path) == 0 else {
            unlink(temporary)
            throw .sessionFile("cannot write \(path): \(String(cString: strerror(errno)))")
        }
    }
}
