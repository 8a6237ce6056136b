public import Foundation
public import Janus
import Locking
public import Logging
import Synchronization

/// The room's publishers as one handle hears them: it joins as a publisher that never
/// publishes (as ECall phones do) and follows `publishers`, `unpublished` and `leaving`. The
/// one roster: the recorder and the load test's subscribers both use it.
public actor RoomRoster {
    public enum State: Sendable, Equatable { case joined, leaving, left, lost }

    public enum Change: Sendable, Equatable {
        /// Publishers with media that were not in the roster before (those there at the join
        /// are `current` right after it).
        case joined([RoomPublisher])
        /// A publisher left or stopped publishing (`unpublished`/`leaving`).
        case left(RoomPublisher)
        /// The handle's events ended without `leave`: the session is gone.
        case lost
        /// The room was destroyed: nobody is left to follow, and nothing to rejoin.
        case roomDestroyed
    }

    public private(set) var state = State.joined
    public nonisolated let changes: AsyncStream<Change>
    /// Our own publisher id and the private id that ties subscriptions to it.
    public nonisolated let id: Int64
    public nonisolated let privateID: Int64?
    private let changeSink: AsyncStream<Change>.Continuation
    private let handle: JanusHandle
    private var publishers: [Int64: RoomPublisher] = [:]
    /// When Janus said each publisher left: its follower may take a while to get to the change.
    private let departures = Locked<[Int64: Date]>([:])
    private var following: Task<Void, Never>?
    private let log: Logger

    /// Attaches on `session`, checks that the room exists and joins it.
    public static func join(session: JanusSession, room: Int64, display: String, logger: Logger) async throws(BotError) -> RoomRoster {
        do {
            let handle = try await session.attach(plugin: VideoRoom.plugin)
            guard try await VideoRoom.exists(handle, room: room) else {
                await handle.detach()
                throw BotError.roomNotFound(room)
            }
            let joined = try await VideoRoom.joinAsPublisher(handle, room: room, display: display)
            let roster = RoomRoster(handle: handle, joined: joined, logger: logger)
            await roster.start(with: joined.publishers)
            return roster
        } catch {
            throw BotError(error)
        }
    }

    private init(handle: JanusHandle, joined: VideoRoom.Joined, logger: Logger) {
        self.handle = handle
        id = joined.id
        privateID = joined.privateID
        log = logger
        (changes, changeSink) = AsyncStream.makeStream(of: Change.self)
    }

    private func start(with list: [RoomPublisher]) {
        apply(.publishers(list), initial: true)
        let handle = self.handle
        following = Task { [weak self] in
            for await event in handle.events {
                guard case .plugin(let data, let jsep) = event else { continue }
                await self?.apply(VideoRoomEvent(data: data, jsep: jsep))
            }
            if !Task.isCancelled { await self?.ended() }
        }
    }

    /// `initial`: the list from the join, which is `current` and no change.
    private func apply(_ event: VideoRoomEvent, initial: Bool = false) {
        guard state == .joined else { return }
        switch event {
        case .publishers(let list):
            let new = list.filter { !$0.streams.isEmpty && publishers[$0.id] == nil }
            for p in list where !p.streams.isEmpty { publishers[p.id] = p }
            if !new.isEmpty, !initial { changeSink.yield(.joined(new)) }
        case .unpublished(let id), .leaving(let id):
            guard let gone = publishers.removeValue(forKey: id) else { return }
            departures.withLock { $0[id] = Date() }
            changeSink.yield(.left(gone))
        case .destroyed:
            let now = Date()
            departures.withLock { d in for p in publishers.keys { d[p] = now } }
            for p in current { changeSink.yield(.left(p)) }
            publishers = [:]
            changeSink.yield(.roomDestroyed)
        default:
            break
        }
    }

    private func ended() {
        guard state == .joined else { return }
        state = .lost
        changeSink.yield(.lost)
        changeSink.finish()
    }

    /// When Janus said publisher `id` left (once: the entry is taken), if it did.
    public nonisolated func takeDeparture(of id: Int64) -> Date? {
        departures.withLock { $0.removeValue(forKey: id) }
    }

    /// Publishers with media, oldest id first.
    public var current: [RoomPublisher] { publishers.values.sorted { $0.id < $1.id } }

    /// Leaves the room and detaches. Safe to call more than once.
    public func leave(announce: Bool = true) async {
        guard state == .joined || state == .lost else { return }
        let announce = announce && state == .joined
        state = .leaving
        following?.cancel()
        if announce {
            await VideoRoom.leave(handle)
            await handle.detach()
        }
        state = .left
        changeSink.finish()
    }
}
