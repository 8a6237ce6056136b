import CoreMetrics

/// Janus connection counters (docs/architecture.md, "Metrics"), through swift-metrics' API.
/// Each counter is made when its event happens (rare): a static made before the process
/// bootstraps its metrics would stay on the no-op handler.
enum JanusMetrics {
    /// A WebSocket under an open session dropped and is being reopened to claim it back.
    static func reconnecting() { Counter(label: "sfubot_janus_reconnects_total").increment() }
    /// Janus gave a session back over a new WebSocket.
    static func reclaimed() { Counter(label: "sfubot_janus_reclaims_total").increment() }
}
