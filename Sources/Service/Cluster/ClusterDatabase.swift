import Foundation
import Logging
import PostgresNIO

/// The PostgreSQL client of `--database`, running for the process's life, with the schema
/// brought up to date before the service takes a request.
struct ClusterDatabase: Sendable {
    let store: ClusterStore
    private let running: Task<Void, Never>

    static func open(_ options: ClusterOptions, logger: Logger) async throws(ServeError) -> ClusterDatabase {
        let log = logger.forPostgres
        let client = PostgresClient(configuration: try options.clientConfiguration(), backgroundLogger: log)
        let session = try options.connectionConfiguration()
        let running = Task { await client.run() }
        let shown = ClusterOptions.redacted(options.database)
        do {
            let applied = try await JobManager.within(.seconds(15)) { try await ClusterMigrations.run(client, logger: log) }
            guard let applied else { throw ServeError("the database at \(shown) did not answer within 15 s: check --database and that PostgreSQL runs") }
            log.info("cluster: instance \(options.instanceID) on \(shown)\(applied.isEmpty ? "" : ", schema steps \(applied.map(String.init).joined(separator: ", ")) applied")")
        } catch {
            running.cancel()
            if let e = error as? ServeError { throw e }
            throw ServeError("cannot use the database at \(shown) (\(String(reflecting: error).prefix(300))): check --database, the user's rights and that PostgreSQL runs")
        }
        return ClusterDatabase(store: ClusterStore(client: client, instance: options.instanceID, lease: options.lease, log: log, session: session), running: running)
    }

    func close() { running.cancel() }
}

extension Logger {
    /// The cluster's logger, never below debug: at trace (-vv) PostgresNIO logs every backend
    /// message it receives, the session's cancel key (BackendKeyData) among them. The cluster
    /// code logs nothing at trace of its own.
    var forPostgres: Logger {
        var logger = self
        logger[metadataKey: "component"] = "cluster"
        if logger.logLevel < .debug { logger.logLevel = .debug }
        return logger
    }
}
