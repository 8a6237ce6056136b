import Foundation
public import Janus
import Logging

/// Comes back after Janus lost a participant's session (its WebSocket could not be claimed
/// back, or Janus restarted): new sessions, with backoff, until `join` succeeds on one or the
/// deadline passes. The one copy of this loop: the recorder and the player use it.
struct Rejoin {
    /// Opens a session to Janus (a test gives a scripted one).
    typealias Connect = @Sendable (Logger) async throws(BotError) -> JanusSession

    let config: BotConfig
    let deadline: ContinuousClock.Instant
    let log: Logger
    let connect: Connect
    private var backoff = Backoff()
    private(set) var attempts = 0

    /// `deadline`: when to give up; `rejoinTimeout` from now unless the caller's outage began
    /// earlier (attempts on the old session came first).
    init(config: BotConfig, log: Logger, connect: Connect? = nil, deadline: ContinuousClock.Instant? = nil) {
        self.config = config
        self.log = log
        self.connect = connect ?? config.connector
        self.deadline = deadline ?? ContinuousClock.now + config.rejoinTimeout
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
        var last: BotError = .janus(.disconnected)
        while ContinuousClock.now < deadline {
            if attempts > 0 { try? await Task.sleep(for: min(backoff.nextDelay(), deadline - .now)) }
            attempts += 1
            guard !Task.isCancelled, await stillWanted() else { throw .stopped }
            let session: JanusSession
            do { session = try await connect(log) } catch {
                last = error
                log.debug("rejoin attempt \(attempts): \(error)")
                continue
            }
            let joined: T
            do { joined = try await join(session, attempts) } catch {
                await session.close()
                guard !error.isStopped else { throw error }
                last = error
                guard Self.isWorthRetrying(error) else { throw error }
                log.debug("rejoin attempt \(attempts): \(error)")
                continue
            }
            guard !Task.isCancelled, await stillWanted() else {
                await session.close()
                throw .stopped
            }
            return (session, joined)
        }
        log.error("could not rejoin within \(config.rejoinTimeout) after \(cause) (\(attempts) attempts): \(last)")
        throw last
    }
}
