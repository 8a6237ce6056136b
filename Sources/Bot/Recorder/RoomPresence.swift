import Foundation
import Janus

/// Who was in the room while this process recorded it, and when: the publishers the recorder
/// should have recorded, whether or not it ever reached their media. A gap (the call went on
/// without the recorder) that overlaps a publisher's stay cost that publisher's media, and a
/// publisher present with nothing recorded was lost whole (issue 39): both are `errors`, so the
/// exit code (74), a serve job's state and `sfubot_recording_losses_total` say so.
struct RoomPresence: Sendable {
    struct Stay: Sendable, Equatable {
        let feedID: Int64
        let display: String
        let since: Date
        /// nil while present.
        var until: Date?
    }

    private(set) var stays: [Stay] = []

    /// Publishers (with streams) seen now: a stay begins for each not present already.
    mutating func seen(_ list: [RoomPublisher], at time: Date = Date()) {
        for p in list where !p.streams.isEmpty && !present.contains(where: { $0.feedID == p.id }) {
            stays.append(.init(feedID: p.id, display: p.display, since: time))
        }
    }

    mutating func left(_ id: Int64, at time: Date = Date()) {
        for i in stays.indices where stays[i].feedID == id && stays[i].until == nil { stays[i].until = time }
    }

    /// The whole room as a new roster lists it (after a rejoin): who is not in it any more left
    /// while the recorder was away (when is unknown: now, the latest it can have been).
    mutating func current(_ list: [RoomPublisher], at time: Date = Date()) {
        let ids = Set(list.filter { !$0.streams.isEmpty }.map(\.id))
        for i in stays.indices where stays[i].until == nil && !ids.contains(stays[i].feedID) { stays[i].until = time }
        seen(list, at: time)
    }

    var present: [Stay] { stays.filter { $0.until == nil } }

    /// What the recording lost of the publishers present: `recorded`, the feeds with a file;
    /// `reached`, those whose frames arrived but were not written (no key opened them: their
    /// counters say why); `failed`, feeds with an error already.
    func losses(gaps: [RecordingManifest.Gap], recorded: Set<Int64>, reached: Set<Int64>, failed: Set<Int64>,
                started: Date, ended: Date) -> [RecordingManifest.OutputError] {
        var out: [RecordingManifest.OutputError] = []
        func at(_ d: Date) -> String { String(format: "+%.1f s", d.timeIntervalSince(started)) }
        for stay in stays {
            let until = stay.until ?? ended
            let missed = gaps.filter { $0.start < until && ($0.end ?? ended) > stay.since }
            let who = "'\(stay.display)' (feed \(stay.feedID))"
            if !recorded.contains(stay.feedID) {
                guard !reached.contains(stay.feedID), !failed.contains(stay.feedID) else { continue }
                var causes: [String] = []
                for g in missed where !causes.contains(g.cause) { causes.append(g.cause) }
                let why = causes.isEmpty ? "no media from them reached the recorder" : causes.joined(separator: "; ")
                out.append(.init(time: until, feedID: stay.feedID, display: stay.display,
                                 error: "\(who) was in the room from \(at(stay.since)) to \(at(until)) and nothing of theirs was recorded: \(why)"))
                continue
            }
            for g in missed {
                let from = max(g.start, stay.since), to = min(g.end ?? ended, until)
                out.append(.init(time: to, feedID: stay.feedID, display: stay.display,
                                 error: "\(who) was in the room while the recorder was away from \(at(from)) to \(at(to)) (\(String(format: "%.1f", to.timeIntervalSince(from))) s: \(g.cause)): their media then is not recorded"))
            }
        }
        return out
    }
}
