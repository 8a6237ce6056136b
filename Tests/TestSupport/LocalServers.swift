public import Foundation

/// The Python tools of scripts/s3-venv (moto's S3 server, botocore, standardwebhooks) and the
/// helper scripts in Tests/S3/. `make test` makes the venv before the tests run, because the
/// tests run in a network namespace without PyPI.
public enum S3Venv {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static var directory: URL {
        let run = ProcessInfo.processInfo.environment["SFUBOT_RUN_DIR"].map { URL(fileURLWithPath: $0) } ?? root.appendingPathComponent(".run")
        return run.appendingPathComponent("venv-s3")
    }

    public static var python: URL { directory.appendingPathComponent("bin/python") }
    public static var motoServer: URL { directory.appendingPathComponent("bin/moto_server") }
    public static func script(_ name: String) -> URL { root.appendingPathComponent("Tests/S3/\(name)") }

    /// Why the venv cannot be used, or nil when it can.
    public static var missing: String? {
        FileManager.default.isExecutableFile(atPath: motoServer.path) ? nil : "\(motoServer.path) missing: run scripts/s3-venv (make test does)"
    }
}

/// A server process a test starts on 127.0.0.1 and stops (moto's S3 server, the tampering
/// proxy, the webhook receiver). `start` returns once the port takes connections; `stop`
/// returns once the process is gone, so a restart on the same port finds it free.
public final class LocalServer: Sendable {
    public let port: Int
    let process: ChildProcess

    public struct NotListening: Error, CustomStringConvertible {
        public let description: String
    }

    public static func start(_ executable: URL, _ arguments: [String], port: Int, environment: [String: String]? = nil) async throws -> LocalServer {
        let process = try ChildProcess(executable, arguments, environment: environment)
        let server = LocalServer(port: port, process: process)
        guard await eventually(within: 60, { Faults.isListening(port: port) || !process.isRunning }), process.isRunning else {
            await server.stop()
            let output = await process.finished()
            throw NotListening(description: "\(executable.lastPathComponent) did not listen on 127.0.0.1:\(port): \(output.errText.suffix(2000))")
        }
        return server
    }

    /// moto's S3-compatible server (in memory: a restart forgets every bucket).
    public static func moto(port: Int) async throws -> LocalServer {
        var environment = ProcessInfo.processInfo.environment
        // moto answers for any region; no outside lookups.
        environment["MOTO_ALLOW_NONEXISTENT_REGION"] = "true"
        return try await start(S3Venv.motoServer, ["-H", "127.0.0.1", "-p", "\(port)"], port: port, environment: environment)
    }

    /// One of Tests/S3's scripts, run with the venv's Python.
    public static func python(_ script: String, _ arguments: [String], port: Int) async throws -> LocalServer {
        try await start(S3Venv.python, [S3Venv.script(script).path] + arguments, port: port)
    }

    init(port: Int, process: ChildProcess) { (self.port, self.process) = (port, process) }

    /// A test that threw before `stop` leaves no server behind (it would outlive the test
    /// process, holding its port).
    deinit { if process.isRunning { process.signal(SIGKILL) } }

    public var endpoint: String { "http://127.0.0.1:\(port)" }

    /// SIGKILL: these servers keep nothing worth a clean exit (moto is in memory), and a child
    /// of the test process inherits its blocked SIGTERM (it would wait for nothing).
    public func stop() async {
        process.signal(SIGKILL)
        _ = await process.exit()
    }
}
