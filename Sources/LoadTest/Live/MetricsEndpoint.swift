public import Foundation
import Hummingbird
public import Logging
import Synchronization

/// Prometheus metrics of a running load test on `GET /metrics` (text exposition format 0.0.4),
/// updated once a second from the live figures.
public final class MetricsEndpoint: Sendable {
    private let latest = Mutex<LiveFigures?>(nil)
    private let shard: Int
    private let task: Mutex<Task<Void, Never>?> = Mutex(nil)

    public init(shard: Int) { self.shard = shard }

    public func update(_ f: LiveFigures) { latest.withLock { $0 = f } }

    /// Serves on host:port until `stop`. Returns once it listens; throws if it cannot (the port
    /// is taken, the host does not resolve), so a run never goes on without the endpoint asked for.
    public func start(host: String, port: Int, logger: Logger) async throws(StartError) {
        let router = Router()
        router.get("metrics") { [self] _, _ -> Response in
            Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4"], body: .init(byteBuffer: .init(string: render())))
        }
        var quiet = logger
        quiet.logLevel = .warning
        // First element: nil once the server listens, or the error that ended it before.
        let (ready, readyContinuation) = AsyncStream.makeStream(of: (any Error)?.self)
        let app = Application(router: router, configuration: .init(address: .hostname(host, port: port)),
                              onServerRunning: { _ in readyContinuation.yield(nil) }, logger: quiet)
        task.withLock {
            $0 = Task {
                do { try await app.runService() } catch { readyContinuation.yield(error) }
                readyContinuation.finish()
            }
        }
        var outcome: (any Error)?? = .none
        for await first in ready {
            outcome = first
            break
        }
        switch outcome {
        case .some(.none): return
        case .some(.some(let error)): throw StartError(host: host, port: port, reason: String(describing: error))
        case .none: throw StartError(host: host, port: port, reason: "the server stopped before it listened")
        }
    }

    /// The endpoint could not listen.
    public struct StartError: Error, CustomStringConvertible {
        public let host: String, port: Int, reason: String
        public var description: String {
            "cannot serve metrics on \(host):\(port): \(reason); pick another --metrics-port or stop what uses it"
        }
    }

    public func stop() { task.withLock { $0?.cancel() } }

    func render() -> String {
        guard let f = latest.withLock({ $0 }) else { return "" }
        let s = f.sample, l = "shard=\"\(shard)\""
        var out = ""
        func metric(_ name: String, _ type: String, _ help: String, _ values: [(String, Double)]) {
            out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
            for (labels, v) in values { out += "\(name){\(labels.isEmpty ? l : l + "," + labels)} \(v)\n" }
        }
        metric("sfubot_load_bots", "gauge", "Bots by role and state.", [
            ("role=\"publisher\",state=\"joined\"", Double(s.publishersJoined)),
            ("role=\"subscriber\",state=\"joined\"", Double(s.subscribersJoined)),
            ("state=\"failed\"", Double(s.failed)), ("state=\"planned\"", Double(f.planned)),
        ])
        metric("sfubot_load_join_retries_total", "counter", "Join attempts beyond each bot's first.", [("", Double(f.retries))])
        metric("sfubot_load_bitrate_mbps", "gauge", "RTP bitrate over all bots (webrtcbin counters).", [
            ("direction=\"out\"", s.mbpsOut), ("direction=\"in\"", s.mbpsIn),
        ])
        metric("sfubot_load_rtp_packets_total", "counter", "RTP packets sent by publishers and received by subscribers.", [
            ("direction=\"out\"", Double(f.packetsSent)), ("direction=\"in\"", Double(f.packetsReceived)),
        ])
        if let loss = s.lossPercent { metric("sfubot_load_loss_percent", "gauge", "Packets lost at subscribers since the previous read.", [("", loss)]) }
        metric("sfubot_load_frames_decrypted_total", "counter", "Frames subscribers decrypted.", [("", Double(s.framesOpened))])
        metric("sfubot_load_decrypt_failures_total", "counter", "Frames subscribers could not decrypt.", [("", Double(s.decryptFailures))])
        let c = f.comebacks
        metric("sfubot_load_connection_drops_total", "counter", "WebSockets to Janus that dropped under an open session (reconnects).", [("", Double(c.connectionDrops))])
        metric("sfubot_load_claims_total", "counter", "Dropped sessions claimed back over a new WebSocket.", [("", Double(c.claims))])
        metric("sfubot_load_rejoins_total", "counter", "Bots that came back on a new Janus session.", [("", Double(c.rejoins))])
        metric("sfubot_load_media_restarts_total", "counter", "PeerConnections replaced on the same session (ICE failed, media lost, chaos).", [("", Double(c.mediaRestarts))])
        metric("sfubot_load_gap_seconds_total", "counter", "Seconds from each loss to media again, summed over bots.", [("", c.gapSeconds)])
        if !f.faults.isEmpty {
            metric("sfubot_load_chaos_faults_total", "counter", "Chaos faults measured, by kind.",
                   f.faults.sorted { $0.key < $1.key }.map { ("kind=\"\($0.key)\"", Double($0.value)) })
            metric("sfubot_load_chaos_not_recovered_total", "counter", "Chaos faults the room did not recover from.", [("", Double(f.faultsNotRecovered))])
        }
        metric("sfubot_load_cpu_cores", "gauge", "CPU used by this process, in cores.", [("", s.cpuCores)])
        metric("sfubot_load_resident_bytes", "gauge", "Resident memory of this process.", [("", s.rssMB * 1_048_576)])
        metric("sfubot_load_threads", "gauge", "Threads of this process.", [("", Double(s.threads))])
        return out
    }
}
