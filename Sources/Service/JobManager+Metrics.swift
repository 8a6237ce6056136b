import Metrics

extension JobManager {
    /// Free capacity and jobs per kind and state, as gauges (LiveKit Egress shows the same).
    func publishGauges() {
        Gauge(label: "sfubot_jobs_capacity_free").record(freeCapacity)
        var counts: [String: Int] = [:]
        for job in jobs.values { counts["\(job.spec.kind.rawValue)/\(job.state.rawValue)", default: 0] += 1 }
        for kind in JobSpec.Kind.allCases {
            for state in Job.State.allCases {
                Gauge(label: "sfubot_jobs", dimensions: [("kind", kind.rawValue), ("state", state.rawValue)])
                    .record(counts["\(kind.rawValue)/\(state.rawValue)", default: 0])
            }
        }
    }

    /// Each second: the gauges, `job.reconnecting` for outages not yet announced, `relay.*`.
    func everySecond() {
        publishGauges()
        announceReconnects()
        announceRelays()
    }
}
