import PrivateIO
// `stat` comes from CDispatch for MemberImportVisibility (see Roots.swift).
internal import CDispatch
import Foundation
public import Logging
import ServiceLifecycle
import Synchronization
import UnixSignals
#if canImport(Glibc)
import Glibc
import Locking
#endif

/// The API's bearer token, from a file only its owner can read, read again when it changes:
/// on SIGHUP, and on a request at most once a second if the file's identity (inode, size,
/// modification and change times) moved. Once the file changed, the old token no longer opens
/// anything; a file that no longer holds a valid token (mode, length) opens nothing until fixed.
public final class TokenFile: Sendable {
    /// Why a token file cannot be used; `unreadable` (no file) or a file that is wrong.
    public struct Problem: Error, CustomStringConvertible, Sendable {
        public let description: String
        public let unreadable: Bool
    }

    public let path: String
    private struct State {
        var token: String?
        var identity: [Int]
        var checked: ContinuousClock.Instant
    }
    private let state: Locked<State>
    private let log: Logger

    /// Reads the file once; throws if it does not hold a usable token.
    public init(path: String, logger: Logger) throws(Problem) {
        self.path = path
        log = logger
        let (token, identity) = try Self.read(path)
        state = Locked(State(token: token, identity: identity, checked: .now))
    }

    /// The token now; nil while the file holds none that is valid.
    func current() async -> String? {
        let due = state.withLock { s in
            guard ContinuousClock.now - s.checked >= .seconds(1) else { return false }
            s.checked = .now
            return true
        }
        if due { await OffPool.run(on: Self.queue) { [self] in refresh(force: false) } }
        return state.withLock { $0.token }
    }

    /// Reads the file again if it changed (or whatever the case with `force`, on SIGHUP).
    func refresh(force: Bool) {
        let identity = Self.identity(path)
        guard force || identity != state.withLock({ $0.identity }) else { return }
        let token: String?
        do {
            let (read, _) = try Self.read(path)
            token = read
            log.notice("token file \(path) read again: the previous token no longer opens the API")
        } catch {
            token = nil
            log.error("token file \(path) changed and \(error): every /v1 request is refused until it is fixed")
        }
        state.withLock { s in
            s.token = token
            s.identity = identity
        }
    }

    /// Reads the file again, whatever changed (SIGHUP), off the cooperative pool.
    func reload() async { await OffPool.run(on: Self.queue) { [self] in refresh(force: true) } }

    /// The token in `path`, checked as at start: only its owner may read the file (anyone who
    /// holds the token can record calls), 16 characters or more, no spaces.
    public static func read(_ path: String) throws(Problem) -> (String, [Int]) {
        let contents: PrivateFile.Contents
        do { contents = try PrivateFile.read(path, what: "the token file", maxBytes: 4096) } catch {
            throw Problem(description: error.description, unreadable: error.unreadable)
        }
        let info = contents.info
        let token = String(decoding: contents.bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard token.utf8.count >= 16, !token.contains(where: \.isWhitespace) else {
            throw Problem(description: "the token in \(path) must be at least 16 characters, without spaces (e.g. `openssl rand -hex 32`)", unreadable: false)
        }
        return (token, identity(of: info))
    }

    private static func identity(_ path: String) -> [Int] {
        var info = stat()
        return stat(path, &info) == 0 ? identity(of: info) : []
    }

    private static func identity(of info: stat) -> [Int] {
        [Int(info.st_dev), Int(info.st_ino), Int(info.st_size), info.st_mtim.tv_sec, info.st_mtim.tv_nsec, info.st_ctim.tv_sec, info.st_ctim.tv_nsec]
    }

    /// Serial: reloads happen one at a time, in order.
    private static let queue = DispatchQueue(label: "sfubot.serve.token")
}

/// Reads the token file again on every SIGHUP, until the service group shuts down.
struct TokenReloader: Service {
    let tokens: TokenFile

    func run() async throws {
        for await _ in await UnixSignalsSequence(trapping: .sighup).cancelOnGracefulShutdown() {
            await tokens.reload()
        }
    }
}
