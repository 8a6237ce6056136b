import Bot
import Foundation
import Spool
import Webhooks

/// What `relay.*` has said of one relay job in this run.
struct RelayWatch: Sendable {
    /// Outages announced, and the outage count at the last `relay.started` (-1: none yet).
    var outages = 0
    var startedAfter = -1
}

extension JobPublishing {
    /// The destination held this long before `relay.started` says it took the stream: an RTMP
    /// or SRT output is up before the server answers, and one that is refused fails within it.
    static let relayStartedAfter: TimeInterval = 3

    /// `relay.started` once the destination took frames for `relayStartedAfter` (first, and again
    /// after each outage: `outage` says how many came before it), `relay.reconnecting` once per
    /// outage of the destination (its first failure, or a failure after an output held 10 s; the
    /// retries in between are the same outage), with why and since when. Called each second and
    /// at the end. Ids name the run and the count, so a repeat queues nothing twice.
    func watchRelay(job: String, kind: String, room: Int64, resumes: Int, to: String?, status: RelayStatus.Snapshot, now: Date = Date()) {
        guard webhooks != nil else { return }
        let (outages, started) = relays.update { all -> ([Int], Date?) in
            var watch = all[job] ?? RelayWatch()
            let outages = watch.outages < status.outages ? Array(watch.outages + 1...status.outages) : []
            watch.outages = max(watch.outages, status.outages)
            var started: Date?
            if let since = status.sendingSince, now.timeIntervalSince(since) >= Self.relayStartedAfter, watch.startedAfter < status.outages {
                (started, watch.startedAfter) = (since, status.outages)
            }
            all[job] = watch
            return (outages, started)
        }
        for number in outages {
            // Outages that began and ended within one tick share the last one's details.
            send(.relayReconnecting, JobEvent(job: job, kind: kind, room: room, resumes: resumes, reason: status.outageReason,
                                              since: status.outageSince, outage: number, to: to),
                 id: "\(job).relay-reconnecting.\(resumes).\(number)")
        }
        if let started {
            send(.relayStarted, JobEvent(job: job, kind: kind, room: room, resumes: resumes, since: started, outage: status.outages, to: to),
                 id: "\(job).relay-started.\(resumes).\(status.outages)")
        }
    }

    /// `relay.ended`: the stream ended (not a shutdown's stop, which is resumed), `reason` when the
    /// job failed (nothing relayed, or frames a down destination missed), and the outages.
    func relayEnded(job: String, kind: String, room: Int64, resumes: Int, to: String?, status: RelayStatus.Snapshot, failed: String?) {
        watchRelay(job: job, kind: kind, room: room, resumes: resumes, to: to, status: status)
        send(.relayEnded, JobEvent(job: job, kind: kind, room: room, resumes: resumes, reason: failed, to: to, outages: status.outages),
             id: "\(job).relay-ended")
        _ = relays.update { $0.removeValue(forKey: job) }
    }
}

extension JobManager {
    /// Each second, from the gauges' loop: `relay.*` for what relay jobs' destinations did.
    func announceRelays() {
        guard let publishing = config.publishing else { return }
        for job in jobs.values where job.isActive {
            guard let relay = job.relay?.snapshot else { continue }
            publishing.watchRelay(job: job.id, kind: job.spec.kind.rawValue, room: job.spec.room, resumes: job.resumes,
                                  to: job.shownDestination, status: relay)
        }
    }
}

extension Job {
    /// `to` as GET shows it: no stream name, token or key.
    var shownDestination: String? { spec.to.flatMap { try? RelayTarget($0) }?.description }
}
