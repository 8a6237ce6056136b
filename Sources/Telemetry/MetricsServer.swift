import Hummingbird
public import Logging
public import Prometheus
import Synchronization
import Locking

/// Serves `GET /metrics` of a registry on its own port (`--metrics-port`), for the commands
/// that have no HTTP server of their own.
public final class MetricsServer: Sendable {
    private let registry: PrometheusCollectorRegistry
    private let task: Locked<Task<Void, Never>?> = Locked(nil)

    public init(registry: PrometheusCollectorRegistry) { self.registry = registry }

    /// Serves on host:port until `stop`. Returns once it listens; throws if it cannot (the port
    /// is taken, the host does not resolve), so a run never goes on without the endpoint asked for.
    public func start(host: String, port: Int, logger: Logger) async throws(MetricsServerError) {
        let router = Router()
        let registry = self.registry
        router.get("metrics") { _, _ -> Response in
            Response(status: .ok, headers: [.contentType: Telemetry.contentType],
                     body: .init(byteBuffer: .init(string: Telemetry.render(registry))))
        }
        // Hummingbird logs every request at info: a scrape every few seconds is not news.
        var quiet = logger
        quiet.logLevel = .warning
        // First element: nil once the server listens, or the error that ended it before.
        let (ready, readyContinuation) = AsyncStream.makeStream(of: (any Error)?.self)
        let app = Application(router: router, configuration: .init(address: .hostname(host, port: port)),
                              onServerRunning: { _ in readyContinuation.yield(nil) }, logger: quiet)
        task.withLock {
            $0?.cancel()
            $0 = Task {
                // No signals: the command's own handler turns SIGINT/SIGTERM into a clean stop
                // (files finished); the server's would take them and the command never stop.
                do { try await app.runService(gracefulShutdownSignals: []) } catch { readyContinuation.yield(error) }
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
        case .some(.some(let error)): throw MetricsServerError(host: host, port: port, .cannotListen(String(describing: error)))
        case .none: throw MetricsServerError(host: host, port: port, .stoppedBeforeListening)
        }
    }

    /// Stops serving (the listening socket closes shortly after).
    public func stop() { task.withLock { $0?.cancel() } }
}

/// The metrics endpoint could not listen on the address asked for.
public struct MetricsServerError: Error, CustomStringConvertible {
    fileprivate enum Reason {
        case cannotListen(String)
        case stoppedBeforeListening
    }

    public let host: String
    public let port: Int
    private let reason: Reason

    fileprivate init(host: String, port: Int, _ reason: Reason) {
        self.host = host
        self.port = port
        self.reason = reason
    }

    public var description: String {
        let why = switch reason {
        case .cannotListen(let error): error
        case .stoppedBeforeListening: "the server stopped before it listened"
        }
        return "cannot serve metrics on \(host):\(port): \(why); pick another --metrics-port or stop what uses it"
    }
}
