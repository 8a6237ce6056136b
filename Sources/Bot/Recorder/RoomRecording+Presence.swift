import FrameCrypto
import Foundation
import Logging

/// The publishers present whom the recorder did not record (`RoomPresence`), and a recorder
/// that reaches no media at all while they are there: it ends after `config.joinTimeout`
/// rather than record nothing for its whole duration.
extension RoomRecording {
    /// The final manifest (read back) with every present publisher's loss in `errors`.
    func noteAbsences(_ m: RecordingManifest) -> RecordingManifest {
        var m = m
        let recorded = Set(m.feeds.map(\.feedID))
        let reached = Set(m.unrecorded.filter { $0.frames.received > 0 }.map(\.feedID))
        let failed = Set(m.errors.compactMap(\.feedID))
        for e in presence.losses(gaps: m.gaps, recorded: recorded, reached: reached, failed: failed, started: m.started, ended: m.ended ?? Date()) {
            log.error("\(e.error)", metadata: ["janus.feed": "\(e.feedID ?? 0)"])
            m.errors.append(e)
            BotMetrics.recordingLoss()
        }
        return m
    }

    /// Every half second until media arrived once: publishers present since `joinTimeout` and
    /// no frame from any of them (TURN, ICE, DTLS or a negotiation that never worked) ends the
    /// recording with an error that says who and why (`gaveUp`).
    func checkReached() {
        guard !reachedMedia, state == .recording || state == .rejoining else { return }
        if branches.newestFrame != nil || finished.contains(where: { $0.frames.received > 0 }) {
            reachedMedia = true
            return
        }
        let present = presence.present
        guard let since = present.map(\.since).min(), Date().timeIntervalSince(since) >= config.joinTimeout.seconds else { return }
        reachedMedia = true
        let who = present.map { "'\($0.display)' (feed \($0.feedID))" }.joined(separator: ", ")
        let why = gaps.last.map { " (last: \($0.cause))" } ?? ""
        let text = "no media reached the recorder within the join timeout (\(Int(config.joinTimeout.seconds)) s) while \(who) \(present.count == 1 ? "was" : "were") in the room\(why): nothing of theirs is recorded; check the ICE/TURN settings (manifest.json's errors list who was lost)"
        log.error("\(text)")
        gaveUp.continuation.yield(.incomplete(text))
    }
}
