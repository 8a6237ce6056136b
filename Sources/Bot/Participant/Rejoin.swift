import Comeback
import Foundation
import Janus
import Logging

/// Comes back after Janus lost a participant's session (its WebSocket could not be claimed
/// back, or Janus restarted): new sessions, with backoff, until `join` succeeds on one or the
/// deadline passes. The player runs it whole; the recorder runs `once` as one step of its own
/// comeback. Either way the loop is the shared `ComebackDriver` (tested on a manual clock).
struct Rejoin {
    /// Opens a session to Janus (a test gives a scripted one).
    typealias Connect = @Sendable (Logger) async throws(BotError) -> JanusSession

    let config: BotConfig
    let log: Logger
    let connect: Connect
    private var machine: ComebackMachine<ContinuousClock.Instant, Failed>
    private let first: ComebackMachine<ContinuousClock.Instant, Failed>.Action

    /// An attempt's error, and whether trying again later can help.
    struct Failed: Error {
        let error: BotError
        let retryable: Bool
    }

    /// Gives up `rejoinTimeout` from now.
    init(config: BotConfig, log: Logger, connect: Connect? = nil) {
        self.config = config
        self.log = log
        self.connect = connect ?? config.connector
        machine = ComebackMachine(ComebackPolicy(deadline: config.rejoinTimeout))
        first = machine.handle(.lost(), at: .now)
    }

    /// Whether trying again later can help: Janus away or restarting, the room not created
    /// again yet, our old publisher id still held by the session Janus has not dropped yet.
    static func isWorthRetrying(_ error: BotError) -> Bool {
        if error.category == .roomMissing { return true }
        guard let j = error.janusError else { return false }
        return j.isConnectionProblem || j.janusCode == 458 || j.pluginCode == VideoRoom.idTakenCode
    }

    /// Opens sessions and runs `join` on each (with the attempt's number, from 1) until it succeeds. `stillWanted` is asked after
    /// every wait and attempt: when it says no (the job is stopping), whatever was opened is
    /// closed and the loop ends with `CancellationError`'s BotError.
    mutating func attempt<T: Sendable>(cause: String, stillWanted: @Sendable () async -> Bool,
                                       _ join: @Sendable (JanusSession, _ attempt: Int) async throws(BotError) -> T) async throws(BotError) -> (JanusSession, T) {
        let connect = self.connect, log = self.log
        let outcome = await machine.run(from: first, on: ContinuousClock(), stillWanted: stillWanted, isWorthRetrying: \.retryable) {
            (n: Int) async throws(Failed) -> (JanusSession, T) in
            try await Self.once(attempt: n, connect: connect, log: log, stillWanted: stillWanted, join)
        }
        switch outcome {
        case .back(let value, _): return value
        case .stopped: throw .stopped
        case .gaveUp(let last, let attempts):
            // Given up at once on what no wait heals; else at the deadline.
            if let last, !last.retryable { throw last.error }
            let error = last?.error ?? .janus(.disconnected)
            log.error("could not rejoin within \(config.rejoinTimeout) after \(cause) (\(attempts) attempts): \(error)")
            throw error
        }
    }

    /// One attempt: a new session, `join` on it, and `stillWanted` asked once it joined (a
    /// session no longer wanted is closed). What failed is closed before this throws.
    static func once<T: Sendable>(attempt n: Int, connect: Connect, log: Logger, stillWanted: @Sendable () async -> Bool,
                                  _ join: @Sendable (JanusSession, _ attempt: Int) async throws(BotError) -> T) async throws(Failed) -> (JanusSession, T) {
        let session: JanusSession
        do throws(BotError) { session = try await connect(log) } catch {
            // Janus away: opening a session is always worth another try.
            log.debug("rejoin attempt \(n): \(error)")
            throw Failed(error: error, retryable: true)
        }
        let joined: T
        do throws(BotError) { joined = try await join(session, n) } catch {
            await session.close()
            let retryable = !error.isStopped && isWorthRetrying(error)
            if retryable { log.debug("rejoin attempt \(n): \(error)") }
            throw Failed(error: error, retryable: retryable)
        }
        guard !Task.isCancelled, await stillWanted() else {
            await session.close()
            throw Failed(error: .stopped, retryable: false)
        }
        return (session, joined)
    }
}

extension Backoff {
    /// After a refused TURN allocation, which fails again at once: 0.5 s doubling to 30 s, not
    /// jittered (never sooner), so a wrong password is a few gaps naming TURN, not a
    /// PeerConnection torn down every 100 ms.
    static let turnRefused = Backoff(initial: .milliseconds(500), cap: .seconds(30), jitter: 1...1)
}
