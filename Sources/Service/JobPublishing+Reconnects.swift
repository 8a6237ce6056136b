import Bot
import Spool
import Webhooks
import Foundation

/// What `job.reconnecting` has said of one job in this run: outages announced, when the one
/// not yet announced was first seen, and the start of the last one announced.
struct ReconnectWatch: Sendable {
    var announced = 0
    var seen: Date?
    var lastStart: Date?
}

extension JobPublishing {
    /// `job.reconnecting`, once per outage of a job's participant (Janus, its WebSocket or the
    /// media path lost): called each second with the job's live status. Counted from the
    /// participant's comebacks plus the outage under way, so an outage shorter than a second
    /// is announced too (after it ended). The cause and start are the loss the participant
    /// noted, which comes a moment after its phase changes (a recorder finishes its files
    /// first): an outage waits up to 5 s for a loss newer than the last outage's, then goes
    /// with the time it was first seen. The id names the run (`resumes`) and the outage's number.
    func watchReconnects(job: String, kind: String, room: Int64, resumes: Int, live: LiveStatus.Snapshot, now: Date = Date()) {
        guard webhooks != nil else { return }
        let outages = live.comebacks + (live.phase == .reconnecting ? 1 : 0)
        let due: (numbers: [Int], cause: String, since: Date)? = reconnects.update { all in
            var watch = all[job] ?? ReconnectWatch()
            guard outages > watch.announced else { return nil }
            let seen = watch.seen ?? now
            let fresh = live.lastErrorTime.map { time in watch.lastStart.map { time > $0 } ?? true } ?? false
            if !fresh, live.phase == .reconnecting, now.timeIntervalSince(seen) < 5 {
                watch.seen = seen
                all[job] = watch
                return nil
            }
            let since = fresh ? live.lastErrorTime ?? seen : seen
            all[job] = ReconnectWatch(announced: outages, seen: nil, lastStart: since)
            return (Array(watch.announced + 1...outages), fresh ? live.lastError ?? "lost Janus or the media path" : "lost Janus or the media path", since)
        }
        guard let due else { return }
        for number in due.numbers {
            send(.jobReconnecting, JobEvent(job: job, kind: kind, room: room, resumes: resumes, reason: due.cause, since: due.since, outage: number),
                 id: "\(job).reconnecting.\(resumes).\(number)")
        }
    }
}

extension JobManager {
    /// Each second, from the gauges' loop: `job.reconnecting` for outages not yet announced.
    func announceReconnects() {
        guard let publishing = config.publishing else { return }
        for job in jobs.values where job.isActive {
            publishing.watchReconnects(job: job.id, kind: job.spec.kind.rawValue, room: job.spec.room, resumes: job.resumes, live: job.live.snapshot)
        }
    }
}
