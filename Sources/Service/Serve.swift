import Foundation
import Hummingbird
import Logging
import ServiceLifecycle
import UnixSignals

/// `sfubot serve`: the HTTP API and the jobs, in one service group. SIGTERM or SIGINT shut it
/// down gracefully: the server stops taking requests, every job finishes its files, and `run`
/// returns (the process exits 0). A second signal, or a shutdown still busy after
/// `maximumShutdown`, cancels what is left; 5 s later a process still running exits 70
/// (`HardDeadline`), unless files are being finished then.
public enum Serve {
    public static let maximumShutdown: Duration = .seconds(25)

    /// Runs until a signal. `onListening` is called with the bound port once the server listens.
    public static func run(_ config: ServeConfiguration, onListening: (@Sendable (Int) -> Void)? = nil) async throws {
        var logger = config.logger
        logger[metadataKey: "component"] = "serve"
        let log = logger
        var database: ClusterDatabase?
        if let options = config.cluster { database = try await ClusterDatabase.open(options, logger: log) }
        defer { database?.close() }
        let store: any JobStoreBackend = if let database { database.store.serving(config) } else {
            try LocalJobStore(stateDirectory: config.stateDirectory, log: JobManager.logger(config))
        }
        let jobs = JobManager(config: config, store: store)
        let routes = ServiceRoutes(config: config, jobs: jobs, readiness: Readiness(url: config.janus, options: config.janusOptions, logger: log))
        var quiet = log
        quiet.logLevel = max(log.logLevel, .notice)
        let app = Application(
            router: routes.router(),
            // A connection that sends nothing (a header never finished, a keep-alive left open)
            // is closed: Hummingbird 2 has no separate read timeout, and the idle timer only
            // restarts once a whole head or body part has arrived.
            server: .http1(configuration: .init(idleTimeout: .seconds(config.idleTimeoutSeconds))),
            configuration: .init(address: .hostname(config.host, port: config.port), serverName: "sfubot"),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? config.port
                log.info("serving on \(config.host):\(port)")
                onListening?(port)
            },
            logger: quiet)
        var groupConfig = ServiceGroupConfiguration(
            // Shut down in reverse order: the server first (no new jobs), then the jobs.
            services: (config.publishing.map { [.init(service: PublishingService(publishing: $0))] } ?? [])
                + [.init(service: jobs), .init(service: TokenReloader(tokens: config.tokens)), .init(service: app)],
            gracefulShutdownSignals: [.sigterm, .sigint],
            cancellationSignals: [],
            logger: quiet)
        groupConfig.maximumGracefulShutdownDuration = maximumShutdown
        // The group cancels what is left after `maximumShutdown`; a task stuck in C ignores that.
        let hard = HardDeadline(deadline: maximumShutdown + .seconds(5), log: log)
        defer { hard.cancel() }
        try await ServiceGroup(configuration: groupConfig).run()
        log.info("stopped")
    }
}
