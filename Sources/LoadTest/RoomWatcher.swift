import Foundation
import Janus
import Logging

/// One handle that hears the room for all subscriber bots of this process: it joins as a
/// publisher that never publishes (as ECall phones do) and keeps the list of publishers.
actor RoomWatcher {
    private let session: JanusSession
    private let handle: JanusHandle
    private var publishers: [Int64: RoomPublisher] = [:]
    private var events: Task<Void, Never>?
    private let log: Logger

    /// Joins `room`; throws if Janus is unreachable or the room does not exist.
    static func join(url: String, options: JanusSession.Options, room: Int64, display: String, logger: Logger) async throws -> RoomWatcher {
        let session = try await JanusSession.connect(url: url, options: options, logger: logger)
        do {
            let handle = try await session.attach(plugin: VideoRoom.plugin)
            guard try await VideoRoom.exists(handle, room: room) else {
                throw LoadBotError("room \(room) does not exist on \(url): create it first (sfubot room create)")
            }
            let joined = try await VideoRoom.joinAsPublisher(handle, room: room, display: display)
            let watcher = RoomWatcher(session: session, handle: handle, logger: logger)
            await watcher.start(with: joined.publishers)
            return watcher
        } catch {
            await session.close()
            throw error
        }
    }

    private init(session: JanusSession, handle: JanusHandle, logger: Logger) {
        self.session = session
        self.handle = handle
        self.log = logger
    }

    private func start(with list: [RoomPublisher]) {
        update(list)
        let handle = self.handle
        events = Task { [weak self] in
            for await event in handle.events {
                guard case .plugin(let data, let jsep) = event else { continue }
                await self?.apply(VideoRoomEvent(data: data, jsep: jsep))
            }
        }
    }

    private func apply(_ event: VideoRoomEvent) {
        switch event {
        case .publishers(let list): update(list)
        case .unpublished(let id), .leaving(let id): publishers[id] = nil
        default: break
        }
    }

    private func update(_ list: [RoomPublisher]) {
        for p in list where !p.streams.isEmpty { publishers[p.id] = p }
    }

    /// Publishers with media, oldest id first.
    var current: [RoomPublisher] { publishers.values.sorted { $0.id < $1.id } }

    func leave() async {
        events?.cancel()
        await VideoRoom.leave(handle)
        await session.close()
    }
}

/// Which feeds subscriber `index` takes: all, or `limit` of them starting at a different
/// place for each subscriber, so every publisher gets listeners. Feeds it already has stay.
func feedSelection(publishers: [Int64], have: Set<Int64>, index: Int, limit: Int?) -> [Int64] {
    let kept = publishers.filter { have.contains($0) }
    guard let limit, limit < publishers.count else { return publishers.filter { !have.contains($0) } }
    let room = max(0, limit - kept.count)
    guard room > 0 else { return [] }
    let start = (index * limit) % publishers.count
    let rotated = publishers[start...] + publishers[..<start]
    return Array(rotated.filter { !have.contains($0) }.prefix(room))
}
