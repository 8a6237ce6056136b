public import Foundation
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

    /// The host name and a random suffix: two instances on one machine differ, and a restarted
    /// one is a new owner (its jobs show the restart in their history).
    public static func defaultInstanceID() -> String {
        let host = ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init) ?? "sfubot"
        return "\(host)-\(String(UInt32.random(in: 0...UInt32.max), radix: 36))"
    }

    /// The client's settings from the URL; the error says what to fix.
    func clientConfiguration() throws(ServeError) -> PostgresClient.Configuration {
        guard let url = URLComponents(string: database), url.scheme == "postgres" || url.scheme == "postgresql",
              let host = url.host, !host.isEmpty, let user = url.user, !user.isEmpty else {
            throw ServeError("--database takes postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE, got \(Self.redacted(database))")
        }
        let name = url.path.hasPrefix("/") ? String(url.path.dropFirst()) : url.path
        let tls: PostgresClient.Configuration.TLS
        switch url.queryItems?.first(where: { $0.name == "sslmode" })?.value ?? "prefer" {
        case "disable": tls = .disable
        case "prefer": tls = .prefer(.makeClientConfiguration())
        case "require": tls = .require(.makeClientConfiguration())
        case let other: throw ServeError("--database: sslmode \(other) is not supported: give disable, prefer or require")
        }
        // Without one in the URL, libpq's PGPASSWORD: a password on the command line is in every
        // process listing (`ps`), one in the environment (a Kubernetes Secret) is not.
        let password = url.password ?? ProcessInfo.processInfo.environment["PGPASSWORD"]
        var config = PostgresClient.Configuration(host: host, port: url.port ?? 5432, username: user, password: password,
                                                  database: name.isEmpty ? nil : name, tls: tls)
        // A database that does not answer must not hold a renewal past the fence.
        config.options.connectTimeout = lease / 2
        return config
    }

    /// The URL without its password, for messages.
    static func redacted(_ text: String) -> String {
        guard var url = URLComponents(string: text), url.password != nil else { return text }
        url.password = "…"
        return url.string ?? "postgres://…"
    }
}
