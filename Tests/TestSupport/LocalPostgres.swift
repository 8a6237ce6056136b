public import Foundation

/// A PostgreSQL server of a test's own: Debian's `postgresql` (15) binaries, `initdb` into a
/// temporary folder and `postgres` on 127.0.0.1 (the namespace's, under scripts/in-netns) on a
/// port of its own, trust authentication for the user `sfubot`, no fsync (the data is thrown
/// away). PostgreSQL refuses to run as root, so as root (CI) both run as the `postgres` user
/// the package made (`runuser`, util-linux). `stop()` ends it and removes the folder.
public final class LocalPostgres: Sendable {
    public let port: Int
    public let folder: URL
    private let stopCommand: (String, [String])
    private let restartCommand: (String, [String])

    public struct Failed: Error, CustomStringConvertible {
        public let description: String
    }

    /// `postgres://sfubot@127.0.0.1:PORT/DATABASE`, TLS off (loopback only).
    public func url(address: String = "127.0.0.1", database: String = "postgres") -> String { "postgres://sfubot@\(address):\(port)/\(database)?sslmode=disable" }

    /// Where Debian puts the server's binaries (not on PATH): the newest major version there.
    static func binaries() throws -> URL {
        let base = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: base)) ?? []).compactMap(Int.init).sorted()
        guard let newest = versions.last else { throw Failed(description: "PostgreSQL is not installed: apt-get install postgresql (scripts/install-deps)") }
        return URL(fileURLWithPath: "\(base)/\(newest)/bin")
    }

    private init(port: Int, folder: URL, stop: (String, [String]), restart: (String, [String])) {
        self.port = port
        self.folder = folder
        stopCommand = stop
        restartCommand = restart
    }

    /// Every descriptor past stderr closed before `exec` (as deploy/rabbitmq/rabbitctl does):
    /// Foundation's Process learns of an exit from a descriptor its child inherits, and the
    /// server, which outlives pg_ctl, would hold it open: the start would never be seen to end.
    static let closeInherited = "for fd in /proc/$$/fd/*; do fd=${fd##*/}; [ \"$fd\" -gt 2 ] && eval \"exec $fd>&-\"; done; exec \"$@\""

    /// Starts a new, empty server and waits until it takes connections (about 4 s, most of it
    /// initdb).
    /// `addresses`: where it listens (a second loopback address lets a test cut one client off
    /// with iptables while another keeps its connection).
    /// `maxConnections`: a server shared by many suites' tests at once needs more than one test's 50.
    public static func start(port: Int, addresses: [String] = ["127.0.0.1"], maxConnections: Int = 50) async throws -> LocalPostgres {
        let bin = try binaries()
        let folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("sfubot-pg-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let asRoot = getuid() == 0
        if asRoot {
            guard let user = getpwnam("postgres") else { throw Failed(description: "running as root, PostgreSQL needs its `postgres` user: apt-get install postgresql") }
            chown(folder.path, user.pointee.pw_uid, user.pointee.pw_gid)
        }
        func command(_ tool: String, _ arguments: [String]) -> (String, [String]) {
            asRoot ? ("/usr/sbin/runuser", ["-u", "postgres", "--", bin.appendingPathComponent(tool).path] + arguments)
                   : (bin.appendingPathComponent(tool).path, arguments)
        }
        let data = folder.appendingPathComponent("data").path
        let (initdb, initArgs) = command("initdb", ["-D", data, "-U", "sfubot", "--auth=trust", "-E", "UTF8", "--no-sync", "--no-instructions"])
        let made = try await ChildProcess.run(initdb, initArgs)
        guard made.status == 0 else { throw Failed(description: "initdb exited \(made.status): \(made.errText)") }
        // Through pg_ctl: the server runs detached with its output in a log file (a server
        // holding the test's pipes kept their reads from ever ending), and `-w` returns once it
        // takes connections. The socket in the test's folder, not /var/run/postgresql.
        let options = "-k \(folder.path) -c listen_addresses=\(addresses.joined(separator: ",")) -p \(port) -F -c max_connections=\(maxConnections)"
        let log = folder.appendingPathComponent("postgres.log").path
        let (pgctl, args) = command("pg_ctl", ["start", "-w", "-t", "30", "-D", data, "-l", log, "-o", options])
        let started = try await ChildProcess.run("/bin/bash", ["-c", closeInherited, "pg_ctl", pgctl] + args)
        // A restart reuses the options the server was started with (postmaster.opts).
        let pg = LocalPostgres(port: port, folder: folder, stop: command("pg_ctl", ["stop", "-m", "fast", "-w", "-D", data]),
                               restart: command("pg_ctl", ["restart", "-m", "fast", "-w", "-t", "30", "-D", data, "-l", log]))
        guard started.status == 0 else {
            let tail = (try? String(contentsOfFile: log, encoding: .utf8))?.suffix(2000) ?? ""
            await pg.stop()
            throw Failed(description: "pg_ctl start exited \(started.status): \(started.errText) \(tail)")
        }
        return pg
    }

    /// Runs SQL through `psql` (the test's view of the database, independent of the service's client).
    public func psql(_ sql: String, database: String = "postgres") async throws -> String {
        let r = try await ChildProcess.run(Self.binaries().appendingPathComponent("psql").path,
                                           ["-h", "127.0.0.1", "-p", "\(port)", "-U", "sfubot", "-d", database, "-At", "-v", "ON_ERROR_STOP=1", "-c", sql])
        guard r.status == 0 else { throw Failed(description: "psql: \(r.errText)") }
        return r.outText.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Restarts the server (a fast shutdown: every session ended) and waits until it takes
    /// connections again.
    public func restart() async throws {
        let r = try await ChildProcess.run("/bin/bash", ["-c", Self.closeInherited, "pg_ctl", restartCommand.0] + restartCommand.1)
        guard r.status == 0 else { throw Failed(description: "pg_ctl restart exited \(r.status): \(r.errText)") }
    }

    /// Stops the server (a fast shutdown) and removes its folder.
    public func stop() async {
        _ = try? await ChildProcess.run(stopCommand.0, stopCommand.1)
        removeFolder()
    }

    /// Stops the server (immediately) and removes its folder once process `pid` has ended, however
    /// it ends: a server shared by a whole test process has no test to stop it. A watchdog of its
    /// own session (`setsid`), so that a signal to the test's process group spares it.
    public func stopWhenGone(pid: Int32) async throws {
        let script = """
            for fd in /proc/$$/fd/*; do fd=${fd##*/}; [ "$fd" -gt 2 ] && eval "exec $fd>&-"; done
            exec </dev/null >/dev/null 2>&1
            pid=$1 folder=$2; shift 2
            while kill -0 "$pid" 2>/dev/null; do sleep 0.5; done
            "$@"
            rm -rf "$folder"
            """
        let r = try await ChildProcess.run("/usr/bin/setsid", ["-f", "/bin/bash", "-c", script, "watchdog", "\(pid)", folder.path, stopCommand.0] + stopCommand.1)
        guard r.status == 0 else { throw Failed(description: "setsid exited \(r.status): \(r.errText)") }
    }

    private func removeFolder() { try? FileManager.default.removeItem(at: folder) }
}
