import Comeback
import Foundation
import Janus
import Logging

/// A relay that follows its room until the end and comes back when it loses Janus (the
/// session, its WebSocket beyond what the session layer claims back, or the media path): it
/// leaves what is left of the old session and joins again, with backoff, until
/// `rejoinTimeout`, as the recorder and the player do. What it sends to stays open the whole
/// time: a gap, then the participants' media goes on into it once the relay is back.
/// `RelayRoom` (one participant to a live destination) and `SpeakerRoom` (speaker streams).
protocol RoomFollower: Actor {
    nonisolated var config: BotConfig { get }
    nonisolated var log: Logger { get }
    nonisolated var status: RelayStatus { get }
    var session: JanusSession? { get set }
    var roster: RoomRoster? { get set }
    /// Where the current PeerConnections' media loss is told (one sink per session followed).
    var lostSink: AsyncStream<BotError>.Continuation? { get set }
    /// Joins the room (a new session) and subscribes to whom it follows that is there.
    func start() async throws
    func relayLogged(_ list: [RoomPublisher]) async
    func left(_ p: RoomPublisher) async
    /// What is left of a lost session goes; what it sends to stays.
    func dropSession() async
    /// Back in the room after a loss: the status it shows now.
    func cameBack()
    /// Ends what it sends to, leaves and closes everything.
    func finish() async
}

/// A relay's logger: its component and room.
func relayLogger(_ config: BotConfig) -> Logger {
    var log = config.logger
    log[metadataKey: "component"] = "relay"
    log[metadataKey: "room"] = "\(config.room)"
    return log
}

extension RoomFollower {
    /// A new session and the room joined with it, as every `start()` begins; who is there now.
    func joinRoom() async throws -> [RoomPublisher] {
        let session = try await config.connector(log)
        self.session = session
        let roster = try await RoomRoster.join(session: session, room: config.room, display: config.display, logger: log)
        self.roster = roster
        return await roster.current
    }

    /// Joins, follows until `duration`, cancellation or the room's end, then finishes
    /// (uncancelled) whatever happened; a stop is not an error.
    func followToEnd(for duration: Duration?) async throws(BotError) {
        do {
            try await start()
            try await follow(for: duration)
        } catch is CancellationError {
        } catch {
            let e = BotError(error)
            await Finishing.run { await self.finish() }
            if e.isStopped { return }
            throw e
        }
        await Finishing.run { await self.finish() }
    }

    /// Until `duration`, cancellation or the room's end.
    func follow(for duration: Duration?) async throws {
        let end = duration.map { ContinuousClock.now + $0 }
        while let roster {
            guard let lost = try await followOnce(roster, until: end) else { return }
            guard try await rejoin(after: lost, until: end) else { return }
        }
    }

    /// One session's life: nil when the relay is over (its time, the room destroyed), else what
    /// was lost.
    private func followOnce(_ roster: RoomRoster, until end: ContinuousClock.Instant?) async throws -> BotError? {
        let (lost, sink) = AsyncStream.makeStream(of: BotError.self)
        lostSink = sink
        defer { sink.finish() }
        return try await withThrowingTaskGroup(of: BotError?.self) { group in
            group.addTask {
                if let end { try await Task.sleep(until: end) } else { while true { try await Task.sleep(for: .seconds(3600)) } }
                return nil
            }
            group.addTask { [weak self] in
                for await change in roster.changes {
                    switch change {
                    case .joined(let list): await self?.relayLogged(list)
                    case .left(let p): await self?.left(p)
                    case .lost: return BotError.janus(.disconnected)
                    case .roomDestroyed:
                        self?.log.info("the room was destroyed: the relay ends")
                        return nil
                    }
                }
                return nil
            }
            group.addTask {
                for await error in lost { return error }
                return nil
            }
            let first = try await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }

    /// Joins again after `cause`; false when the relay's time ran out meanwhile. Throws the last
    /// error once `rejoinTimeout` has passed.
    private func rejoin(after cause: BotError, until end: ContinuousClock.Instant?) async throws -> Bool {
        log.warning("lost Janus (\(cause)); rejoining within \(config.rejoinTimeout), the stream stays open")
        status.set(.waiting, error: "lost Janus (\(cause)); rejoining")
        await dropSession()
        let clock = ContinuousClock()
        var machine = ComebackMachine<ContinuousClock.Instant, BotError>(ComebackPolicy(deadline: config.rejoinTimeout))
        let first = machine.handle(.lost(), at: clock.now)
        let outcome = await machine.run(from: first, on: clock, stillWanted: { end.map { clock.now < $0 } ?? true },
                                        isWorthRetrying: { !$0.isStopped }) { (n: Int) async throws(BotError) in
            do { try await self.start() } catch {
                await self.dropSession()
                log.warning("rejoin attempt \(n) failed: \(error)")
                throw BotError(error)
            }
        }
        switch outcome {
        case .back(_, let attempt):
            log.info("back in room \(config.room) (attempt \(attempt))")
            status.cameBack()
            cameBack()
            return true
        case .stopped:
            if Task.isCancelled { throw CancellationError() }
            return false
        case .gaveUp(let last, let attempts):
            log.error("could not come back within \(config.rejoinTimeout) (\(attempts) attempts)")
            throw last ?? cause
        }
    }
}
