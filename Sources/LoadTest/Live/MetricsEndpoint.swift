public import Foundation
import Hummingbird
public import Logging
import Synchronization

/// Prometheus metrics of a running load test on `GET /metrics` (text exposition format 0.0.4),
/// updated once a second from the live figures.
public final class MetricsEndpoint: Sendable {
    private let latest = Mutex<LiveFigures?>(nil)
    private let shard: Int
    private let task: Mutex<Task<Void, any Error>?> = Mutex(nil)

    public init(shard: Int) { self.shard = shard }

    public func update(_ f: LiveFigures) { latest.withLock { $0 = f } }

    /// Serves on host:port until `stop`.
    public func start(host: String, port: Int, logger: Logger) {
        let router = Router()
        router.get("metrics") { [self] _, _ -> Response in
            Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4"], body: .init(byteBuffer: .init(string: render())))
        }
        var quiet = logger
        quiet.logLevel = .warning
        let app = Application(router: router, configuration: .init(address: .hostname(host, port: port)), logger: quiet)
        task.withLock { $0 = Task { try await app.runService() } }
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
        metric("sfubot_load_cpu_cores", "gauge", "CPU used by this process, in cores.", [("", s.cpuCores)])
        metric("sfubot_load_resident_bytes", "gauge", "Resident memory of this process.", [("", s.rssMB * 1_048_576)])
        metric("sfubot_load_threads", "gauge", "Threads of this process.", [("", Double(s.threads))])
        return out
    }
}
