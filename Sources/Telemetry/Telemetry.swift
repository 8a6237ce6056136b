import CoreMetrics
public import Prometheus

/// The process's metrics: swift-metrics bootstrapped once with a Prometheus registry. Every
/// command calls `bootstrap()` at the start of `run()`, before anything creates a metric (a
/// metric made before the bootstrap goes to swift-metrics' no-op handler and is never seen).
public enum Telemetry {
    /// Built on first use: swift-metrics allows one bootstrap per process, and a static `let`
    /// runs its initializer exactly once whatever thread asks first.
    private static let registry: PrometheusCollectorRegistry = {
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        return registry
    }()

    /// Bootstraps swift-metrics with a Prometheus registry and returns it; a second call
    /// returns the same registry. Nothing else in the process may call `MetricsSystem.bootstrap`.
    @discardableResult
    public static func bootstrap() -> PrometheusCollectorRegistry { registry }

    /// The registry as Prometheus text exposition format 0.0.4 (what `GET /metrics` returns),
    /// for a server that mounts `/metrics` on its own router.
    public static func render(_ registry: PrometheusCollectorRegistry) -> String {
        registry.emitToString()
    }

    /// The `Content-Type` of `render`'s text.
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"
}
