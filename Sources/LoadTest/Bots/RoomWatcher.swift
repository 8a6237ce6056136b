import Bot
import Janus
import Logging

/// One roster for all subscriber bots of this process, on a session of its own: it joins as
/// a publisher that never publishes (as ECall phones do) and keeps the list of publishers.
struct RoomWatcher: Sendable {
    let session: JanusSession
    let roster: RoomRoster

    /// Joins `room`; throws if Janus is unreachable or the room does not exist.
    static func join(url: String, options: JanusSession.Options, room: Int64, display: String, logger: Logger) async throws -> RoomWatcher {
        let session = try await JanusSession.connect(url: url, options: options, logger: logger)
        do {
            return RoomWatcher(session: session, roster: try await RoomRoster.join(session: session, room: room, display: display, logger: logger))
        } catch {
            await session.close()
            throw error
        }
    }

    /// Publishers with media, oldest id first.
    var current: [RoomPublisher] { get async { await roster.current } }

    func leave() async {
        await roster.leave()
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
