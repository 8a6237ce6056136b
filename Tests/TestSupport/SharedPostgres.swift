import Foundation

/// One PostgreSQL server for every store-level test of the process, with a fresh database per
/// test: starting a server (initdb) takes about 4 s, a database about 50 ms. Started by the
/// first test that asks, stopped by a watchdog once the process has ended
/// (`LocalPostgres.stopWhenGone`). Tests that stop, restart or cut off their server start their own.
public enum SharedPostgres {
    /// Its own port: the per-test servers use 15431–15474. On 127.0.0.2 too, so that a test can
    /// cut one client off (`ss -K dst 127.0.0.2`) while the others keep theirs.
    public static let port = 15529

    private actor Server {
        var starting: Task<LocalPostgres, any Error>?

        func get() async throws -> LocalPostgres {
            if let starting { return try await starting.value }
            let started = Task {
                let pg = try await LocalPostgres.start(port: SharedPostgres.port, addresses: ["127.0.0.1", "127.0.0.2"], maxConnections: 400)
                try await pg.stopWhenGone(pid: getpid())
                return pg
            }
            starting = started
            return try await started.value
        }
    }

    private static let server = Server()

    /// The shared server, started if it is not yet.
    public static func get() async throws -> LocalPostgres { try await server.get() }

    /// A new, empty database on the shared server, named `prefix` and a random suffix: its name.
    public static func database(_ prefix: String) async throws -> (pg: LocalPostgres, name: String) {
        let pg = try await get()
        let name = "\(prefix)_\(UUID().uuidString.prefix(8).lowercased())"
        _ = try await pg.psql("CREATE DATABASE \(name)")
        return (pg, name)
    }
}
