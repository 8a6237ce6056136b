import Foundation
import NIOCore
import NIOSSL
import PostgresNIO

/// `--database` and what goes with it: several `sfubot serve` instances sharing their jobs
/// through one PostgreSQL (docs/cluster.md).
public struct ClusterOptions: Sendable {
    /// `postgres://user[:password]@host[:port]/database[?sslmode=disable|prefer|require]`; the
    /// password may come from `PGPASSWORD` instead.
    public var database: String
    /// This instance's name in `owner` and the owners' history; unique per running instance.
    public var instanceID: String
    /// How long a renewal keeps a job this instance's. Renewed every quarter of it; a job whose
    /// renewals fail is stopped when three eighths of it are left (`LeaseFence`).
    public var lease: Duration = .seconds(4)

    public init(database: String, instanceID: String? = nil) {
        self.database = database
        self.instanceID = instanceID ?? Self.defaultInstanceID()
    }

    var renewEvery: Duration { lease / 4 }
    var margin: Duration { lease * 3 / 8 }
    /// How long an owner's database session must have been seen gone before its jobs are taken
    /// without waiting for the lease: the time a fenced owner's files may take to finish, as
    /// the margin is (docs/cluster.md, liveness).
    var takeoverGrace: Duration { margin }
    /// The instance's own session is pinged this often, and given up (its jobs stopped) when a
    /// ping goes unanswered this long: together well within the grace, so that an owner whose
    /// session the server ended without telling it has stopped before the grace is over.
    var pingEvery: Duration { lease / 16 }
    var pingTimeout: Duration { takeoverGrace / 2 }

    /// The host name and a random suffix: two instances on one machine differ, and a restarted
    /// one is a new owner (its jobs show the restart in their history).
    public static func defaultInstanceID() -> String {
        let host = ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init) ?? "sfubot"
        return "\(host)-\(String(UInt32.random(in: 0...UInt32.max), radix: 36))"
    }

    /// The URL's parts, the error saying what to fix.
    private struct Parsed {
        var host: String, port: Int, user: String, password: String?, database: String?, sslmode: String
    }

    private func parsed() throws(ServeError) -> Parsed {
        guard let url = URLComponents(string: database), url.scheme == "postgres" || url.scheme == "postgresql",
              let host = url.host, !host.isEmpty, let user = url.user, !user.isEmpty else {
            throw ServeError("--database takes postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE, got \(Self.redacted(database))")
        }
        let name = url.path.hasPrefix("/") ? String(url.path.dropFirst()) : url.path
        let mode = url.queryItems?.first(where: { $0.name == "sslmode" })?.value ?? "prefer"
        guard ["disable", "prefer", "require"].contains(mode) else {
            throw ServeError("--database: sslmode \(mode) is not supported: give disable, prefer or require")
        }
        // Without one in the URL, libpq's PGPASSWORD: a password on the command line is in every
        // process listing (`ps`), one in the environment (a Kubernetes Secret) is not.
        let password = url.password ?? ProcessInfo.processInfo.environment["PGPASSWORD"]
        return Parsed(host: host, port: url.port ?? 5432, user: user, password: password, database: name.isEmpty ? nil : name, sslmode: mode)
    }

    /// The pool's settings from the URL.
    func clientConfiguration() throws(ServeError) -> PostgresClient.Configuration {
        let p = try parsed()
        let tls: PostgresClient.Configuration.TLS = switch p.sslmode {
        case "disable": .disable
        case "require": .require(.makeClientConfiguration())
        default: .prefer(.makeClientConfiguration())
        }
        var config = PostgresClient.Configuration(host: p.host, port: p.port, username: p.user, password: p.password, database: p.database, tls: tls)
        // A database that does not answer must not hold a renewal past the fence.
        config.options.connectTimeout = lease / 2
        return config
    }

    /// The settings of the instance's own session (`ClusterLiveness`), outside the pool.
    func connectionConfiguration() throws(ServeError) -> PostgresConnection.Configuration {
        let p = try parsed()
        let tls: PostgresConnection.Configuration.TLS
        do {
            tls = switch p.sslmode {
            case "disable": .disable
            case "require": .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
            default: .prefer(try NIOSSLContext(configuration: .makeClientConfiguration()))
            }
        } catch { throw ServeError("--database: cannot set up TLS (\(error)): check the system's CA certificates or give sslmode=disable") }
        var config = PostgresConnection.Configuration(host: p.host, port: p.port, username: p.user, password: p.password, database: p.database, tls: tls)
        let half = lease / 2
        config.options.connectTimeout = .milliseconds(half.components.seconds * 1000 + half.components.attoseconds / 1_000_000_000_000_000)
        return config
    }

    /// The URL without its password, for messages.
    static func redacted(_ text: String) -> String {
        guard var url = URLComponents(string: text), url.password != nil else { return text }
        url.password = "…"
        return url.string ?? "postgres://…"
    }
}
