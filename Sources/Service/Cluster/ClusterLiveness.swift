import Foundation
import Locking
import Logging
import NIOCore
import PostgresNIO

/// This instance's own PostgreSQL session, outside the pool: while it lives it holds a
/// session-level advisory lock on a random key recorded in `instance_sessions`, and the jobs
/// this instance claims name that key. When the process dies, its kernel closes the socket and
/// PostgreSQL ends the session and its lock at once, so the others see the owner gone without
/// waiting for its lease (`ClusterStore.sweepSessions`). The other way round, the instance
/// stops writing its jobs the moment this session fails, from whichever side
/// (docs/cluster.md, liveness).
enum ClusterLiveness {
    /// Opens a session, tells `up` its key, watches it, and tells `lost` when it ends, before
    /// closing it; then opens the next. Returns when cancelled.
    static func run(_ config: PostgresConnection.Configuration, instance: String, maxJobs: Int, options: ClusterOptions, log: Logger,
                    up: @escaping @Sendable (Int64) async -> Void, lost: @escaping @Sendable (Int64, String) async -> Void) async {
        var attempt = 0
        while !Task.isCancelled {
            attempt += 1
            let key = Int64.random(in: 1...Int64.max)
            var connection: PostgresConnection?
            do {
                let opened = try await PostgresConnection.connect(configuration: config, id: attempt, logger: log)
                connection = opened
                // Only these throw: nothing was claimed under `key` before `up`.
                try await prepare(opened, key: key, instance: instance, maxJobs: maxJobs, options: options, log: log)
                await up(key)
                let why = await watch(opened, every: options.pingEvery, timeout: options.pingTimeout, log: log)
                // The jobs stop writing first: closing the session lets the others take them.
                await lost(key, why)
            } catch {
                if Task.isCancelled { break }
                log.warning("cluster: cannot hold this instance's database session (\(String(reflecting: error).prefix(200))); again in 1 s")
            }
            try? await connection?.close()
            try? await Task.sleep(for: .seconds(1))
        }
    }

    /// The session's settings, its lock, its row. The server's own TCP keepalives on it are
    /// set far past the lease: in a partition the server must not end the session (and let
    /// the others take the jobs) before the owner's lease fence has stopped them.
    private static func prepare(_ connection: PostgresConnection, key: Int64, instance: String, maxJobs: Int, options: ClusterOptions, log: Logger) async throws {
        let idle = max(30, Int(options.lease.components.seconds) * 8)
        for setting in ["tcp_keepalives_idle = \(idle)", "tcp_keepalives_interval = \(idle / 4)", "tcp_keepalives_count = 4",
                        "tcp_user_timeout = 0", "idle_session_timeout = 0", "idle_in_transaction_session_timeout = 0", "statement_timeout = 0"] {
            _ = try await connection.query(PostgresQuery(unsafeSQL: "SET " + setting), logger: log).collect()
        }
        // The lock before the row: a row others can see always has its lock held.
        _ = try await connection.query("SELECT pg_advisory_lock(\(key))", logger: log).collect()
        _ = try await connection.query("INSERT INTO instance_sessions (key, instance, max_jobs) VALUES (\(key), \(instance), \(maxJobs))", logger: log).collect()
    }

    /// Waits until the session fails: closed (FIN, RST, `pg_terminate_backend`, a socket
    /// destroyed with `ss -K`), a ping that errs, or one unanswered for `timeout`. Returns why.
    private static func watch(_ connection: PostgresConnection, every: Duration, timeout: Duration, log: Logger) async -> String {
        let (reasons, sink) = AsyncStream.makeStream(of: String.self)
        connection.closeFuture.whenComplete { _ in sink.yield("the connection closed") }
        let pings = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: every)
                do {
                    let answered = try await JobManager.within(timeout) {
                        _ = try await connection.query("SELECT 1", logger: log).collect()
                        return true
                    }
                    if answered == nil { sink.yield("no answer within \(timeout)"); return }
                } catch {
                    if Task.isCancelled { return }
                    sink.yield("\(String(reflecting: error).prefix(200))")
                    return
                }
            }
        }
        var why = "cancelled"
        for await reason in reasons {
            why = reason
            break
        }
        pings.cancel()
        sink.finish()
        return why
    }
}
