import FrameCrypto
import Foundation
public import Logging
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// `--key-feed PATH`: keys handed in while the call runs, one JSON line each (`KeyFeedLine`),
/// from standard input (`-`), a FIFO (reopened for each writer), a Unix socket (connected to)
/// or a file. Read on a thread of its own: a FIFO's open and every read block, never on
/// Swift's pool. A bad line is refused, logged without its key and counted; it never stops the feed.
public final class KeyFeed: Sendable {
    private let appliedCount = Atomic<Int>(0)
    private let refusedCount = Atomic<Int>(0)
    public var applied: Int { appliedCount.load(ordering: .relaxed) }
    public var refused: Int { refusedCount.load(ordering: .relaxed) }

    private init() {}

    /// Starts reading `path` into `keys`. Fails at once if the path is neither `-` nor an
    /// existing FIFO, socket or file.
    public static func start(path: String, keys: any IndexedKeying, logger: Logger) throws(KeyFeedSourceError) -> KeyFeed {
        let source = try Source(path: path)
        let feed = KeyFeed()
        let thread = Thread {
            repeat {
                guard let fd = source.open() else {
                    logger.error("key feed \(path): cannot open it: \(String(cString: strerror(errno)))")
                    return
                }
                feed.read(fd: fd, keys: keys, logger: logger, path: path)
                if fd != 0 { close(fd) }
            } while source.reopens
            logger.info("key feed \(path): ended (\(feed.applied) applied, \(feed.refused) refused)")
        }
        thread.name = "sfubot.key-feed"
        thread.start()
        return feed
    }

    /// Applies one line (also serve's `POST …/keys`); false, logged, if it was refused.
    @discardableResult
    public func apply(_ line: Substring, to keys: any IndexedKeying, logger: Logger, source: String) -> Bool {
        do {
            switch try KeyFeedLine.parse(line) {
            case .set(let participant, let index, let material):
                try keys.set(participant: participant, index: index, material: material)
                logger.info("key feed \(source): key \(index) of \(participant ?? "everyone") set")
            case .ratchet(let participant, let index):
                guard try keys.ratchet(participant: participant, index: index) else {
                    throw KeyFeedError.neitherKeyNorRatchet
                }
                logger.info("key feed \(source): key \(index) of \(participant ?? "everyone") ratcheted")
            }
            appliedCount.add(1, ordering: .relaxed)
            return true
        } catch {
            refusedCount.add(1, ordering: .relaxed)
            logger.warning("key feed \(source): line refused: \(error)")
            return false
        }
    }

    private func read(fd: Int32, keys: any IndexedKeying, logger: Logger, path: String) {
        var pending = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            pending.append(contentsOf: chunk[0..<n])
            while let newline = pending.firstIndex(of: 0x0A) {
                let line = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeSubrange(...newline)
                if !line.allSatisfy(\.isWhitespace) { apply(Substring(line), to: keys, logger: logger, source: path) }
            }
            // A line past the limit is refused whole, not buffered without end.
            if pending.count > KeyFeedLine.maxBytes {
                pending.removeAll()
                refusedCount.add(1, ordering: .relaxed)
                logger.warning("key feed \(path): a line longer than \(KeyFeedLine.maxBytes) bytes refused")
            }
        }
    }

    private struct Source: Sendable {
        enum Kind { case stdin, fifo, socket, file }
        let path: String
        let kind: Kind

        init(path: String) throws(KeyFeedSourceError) {
            self.path = path
            if path == "-" { kind = .stdin; return }
            var st = stat()
            guard stat(path, &st) == 0 else { throw KeyFeedSourceError(path: path, reason: String(cString: strerror(errno))) }
            switch st.st_mode & S_IFMT {
            case S_IFIFO: kind = .fifo
            case S_IFSOCK: kind = .socket
            case S_IFREG: kind = .file
            default: throw KeyFeedSourceError(path: path, reason: "not a FIFO, a Unix socket or a file")
            }
        }

        /// A FIFO is opened again after each writer closes it: a host app may write key by key.
        var reopens: Bool { kind == .fifo }

        func open() -> Int32? {
            switch kind {
            case .stdin: return 0
            case .fifo, .file:
                let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
                return fd >= 0 ? fd : nil
            case .socket:
                let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
                guard fd >= 0 else { return nil }
                var address = sockaddr_un()
                address.sun_family = sa_family_t(AF_UNIX)
                let bytes = Array(path.utf8)
                guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { close(fd); return nil }
                withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
                let ok = withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
                }
                guard ok == 0 else { close(fd); return nil }
                return fd
            }
        }
    }
}

/// `--key-feed` names something that cannot be read as a feed.
public struct KeyFeedSourceError: Error, CustomStringConvertible {
    public let path: String
    public let reason: String
    public var description: String { "--key-feed \(path): \(reason); give -, a FIFO (mkfifo), a Unix socket or a file of JSON lines" }
}
