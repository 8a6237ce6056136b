import ArgumentParser
import Logging
import Telemetry

/// `--metrics-port` / `--metrics-host`: Prometheus text on `GET /metrics` while the command runs.
struct MetricsOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Serve Prometheus metrics on this port (GET /metrics).", valueName: "port"))
    var metricsPort: Int?
    @Option(help: ArgumentHelp("Address the metrics endpoint listens on.", valueName: "host"))
    var metricsHost = "127.0.0.1"

    func validate() throws {
        try OptionCheck.port(metricsPort, "--metrics-port")
    }

    /// Bootstraps the process's metrics (always: counters made from here on are real) and, if
    /// a port was given, serves them. Call it first in `run()`: a port that cannot be served
    /// ends the command (exit 78) before it joins anything, since a run asked to be watched
    /// and not served would look like one with nothing to show.
    func start(logger: Logger) async -> MetricsServer? {
        let registry = Telemetry.bootstrap()
        guard let metricsPort else { return nil }
        let server = MetricsServer(registry: registry)
        do { try await server.start(host: metricsHost, port: metricsPort, logger: logger) } catch {
            CLIFailure(error.description, code: .config).exit()
        }
        return server
    }
}
