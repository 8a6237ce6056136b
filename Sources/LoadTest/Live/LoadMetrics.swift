public import CoreMetrics
import Synchronization
import Locking

/// A running load test's figures as swift-metrics gauges and counters (`sfubot_load_*`, label
/// `shard`), fed once a second from the live figures; `sfubot load --metrics-port` serves them
/// with everything else the process counts. Counters follow the run's totals: each update
/// adds what the total grew by since the previous one.
public final class LoadMetrics: Sendable {
    private let shard: [(String, String)]
    private let factory: any MetricsFactory
    private let series: Series
    private let state = Locked(Totals())

    /// `factory`: where the series live (the process's bootstrapped one unless a test gives its own).
    public init(shard: Int, factory: any MetricsFactory = MetricsSystem.factory) {
        self.shard = [("shard", "\(shard)")]
        self.factory = factory
        series = Series(shard: self.shard, factory: factory)
    }

    public func update(_ f: LiveFigures) {
        let s = f.sample, c = f.comebacks, g = series
        g.publishersJoined.record(s.publishersJoined)
        g.subscribersJoined.record(s.subscribersJoined)
        g.failed.record(s.failed)
        g.planned.record(f.planned)
        g.mbpsOut.record(s.mbpsOut)
        g.mbpsIn.record(s.mbpsIn)
        // Unknown until subscribers have been read twice: the gauge keeps no made-up value.
        if let loss = s.lossPercent { g.loss.record(loss) }
        g.cpuCores.record(s.cpuCores)
        g.residentBytes.record(s.rssMB * 1_048_576)
        g.threads.record(s.threads)
        state.withLock { t in
            func grow(_ counter: Counter, _ last: inout Int, _ now: Int) {
                if now > last { counter.increment(by: now - last) }
                last = max(last, now)
            }
            grow(g.retries, &t.retries, f.retries)
            grow(g.packetsOut, &t.packetsOut, Int(clamping: f.packetsSent))
            grow(g.packetsIn, &t.packetsIn, Int(clamping: f.packetsReceived))
            grow(g.framesDecrypted, &t.framesDecrypted, s.framesOpened)
            grow(g.decryptFailures, &t.decryptFailures, s.decryptFailures)
            grow(g.connectionDrops, &t.connectionDrops, c.connectionDrops)
            grow(g.claims, &t.claims, c.claims)
            grow(g.rejoins, &t.rejoins, c.rejoins)
            grow(g.mediaRestarts, &t.mediaRestarts, c.mediaRestarts)
            if c.gapSeconds > t.gapSeconds { g.gapSeconds.increment(by: c.gapSeconds - t.gapSeconds) }
            t.gapSeconds = max(t.gapSeconds, c.gapSeconds)
            // Chaos series appear with the first fault, as the old hand-written text did.
            for (kind, count) in f.faults.sorted(by: { $0.key < $1.key }) {
                let counter = t.faultCounters[kind] ?? Counter(label: "sfubot_load_chaos_faults_total", dimensions: shard + [("kind", kind)], factory: factory)
                t.faultCounters[kind] = counter
                grow(counter, &t.faults[kind, default: 0], count)
            }
            if !f.faults.isEmpty {
                let counter = t.notRecoveredCounter ?? Counter(label: "sfubot_load_chaos_not_recovered_total", dimensions: shard, factory: factory)
                t.notRecoveredCounter = counter
                grow(counter, &t.notRecovered, f.faultsNotRecovered)
            }
        }
    }

    /// What the counters last reached.
    private struct Totals {
        var retries = 0, packetsOut = 0, packetsIn = 0, framesDecrypted = 0, decryptFailures = 0
        var connectionDrops = 0, claims = 0, rejoins = 0, mediaRestarts = 0, gapSeconds = 0.0
        var faults: [String: Int] = [:], notRecovered = 0
        var faultCounters: [String: Counter] = [:]
        var notRecoveredCounter: Counter?
    }

    /// Every series but the chaos ones, made once.
    private struct Series: Sendable {
        let publishersJoined, subscribersJoined, failed, planned: Gauge
        let mbpsOut, mbpsIn, loss, cpuCores, residentBytes, threads: Gauge
        let retries, packetsOut, packetsIn, framesDecrypted, decryptFailures: Counter
        let connectionDrops, claims, rejoins, mediaRestarts: Counter
        let gapSeconds: FloatingPointCounter

        init(shard: [(String, String)], factory: any MetricsFactory) {
            func gauge(_ name: String, _ labels: [(String, String)] = []) -> Gauge {
                Gauge(label: name, dimensions: shard + labels, factory: factory)
            }
            func counter(_ name: String, _ labels: [(String, String)] = []) -> Counter {
                Counter(label: name, dimensions: shard + labels, factory: factory)
            }
            // Bots by role and state.
            publishersJoined = gauge("sfubot_load_bots", [("role", "publisher"), ("state", "joined")])
            subscribersJoined = gauge("sfubot_load_bots", [("role", "subscriber"), ("state", "joined")])
            failed = gauge("sfubot_load_bots", [("state", "failed")])
            planned = gauge("sfubot_load_bots", [("state", "planned")])
            // RTP bitrate over all bots (webrtcbin's counters), Mbit/s.
            mbpsOut = gauge("sfubot_load_bitrate_mbps", [("direction", "out")])
            mbpsIn = gauge("sfubot_load_bitrate_mbps", [("direction", "in")])
            // Packets lost at subscribers since the previous read, percent.
            loss = gauge("sfubot_load_loss_percent")
            // This process: CPU in cores, resident memory, threads.
            cpuCores = gauge("sfubot_load_cpu_cores")
            residentBytes = gauge("sfubot_load_resident_bytes")
            threads = gauge("sfubot_load_threads")
            // Join attempts beyond each bot's first.
            retries = counter("sfubot_load_join_retries_total")
            // RTP packets sent by publishers and received by subscribers.
            packetsOut = counter("sfubot_load_rtp_packets_total", [("direction", "out")])
            packetsIn = counter("sfubot_load_rtp_packets_total", [("direction", "in")])
            // Frames subscribers decrypted, and could not.
            framesDecrypted = counter("sfubot_load_frames_decrypted_total")
            decryptFailures = counter("sfubot_load_decrypt_failures_total")
            // WebSockets to Janus that dropped under an open session; sessions claimed back;
            // bots back on a new session; PeerConnections replaced on the same session.
            connectionDrops = counter("sfubot_load_connection_drops_total")
            claims = counter("sfubot_load_claims_total")
            rejoins = counter("sfubot_load_rejoins_total")
            mediaRestarts = counter("sfubot_load_media_restarts_total")
            // Seconds from each loss to media again, summed over bots.
            gapSeconds = FloatingPointCounter(label: "sfubot_load_gap_seconds_total", dimensions: shard, factory: factory)
        }
    }
}
