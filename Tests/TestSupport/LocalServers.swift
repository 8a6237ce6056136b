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

/// Tests/S3/webhook_receiver.py on 127.0.0.1:`port`: checks every delivery's Standard Webhooks
/// signature against a secret of its own (written 0600 into `dir`) and appends the events it
/// accepts to a JSON-lines file.
public struct WebhookReceiver: Sendable {
    public let server: LocalServer
    public let secret: URL
    public let received: URL

    public static func start(port: Int, in dir: URL, seed: UInt8 = 7) async throws -> WebhookReceiver {
        let secret = dir.appendingPathComponent("whsec"), received = dir.appendingPathComponent("received.jsonl")
        _ = FileManager.default.createFile(atPath: secret.path, contents: Data(("whsec_" + Data(repeating: seed, count: 32).base64EncodedString()).utf8),
                                           attributes: [.posixPermissions: 0o600])
        let server = try await LocalServer.python("webhook_receiver.py", ["\(port)", secret.path, received.path], port: port)
        return WebhookReceiver(server: server, secret: secret, received: received)
    }

    /// serve's flags that send its events here.
    public var flags: [String] { ["--webhook-url", "http://127.0.0.1:\(server.port)/hooks", "--webhook-secret-file", secret.path] }

    /// The events accepted so far with webhook id `id` (each `{"id", "type", "data", …}`).
    public func events(id: String) -> [[String: Any]] { all.filter { $0["id"] as? String == id } }

    /// The events accepted so far of type `type` (`relay.started`…), in the order they came.
    public func events(type: String) -> [[String: Any]] { all.filter { $0["type"] as? String == type } }

    private var all: [[String: Any]] {
        ((try? String(contentsOf: received, encoding: .utf8)) ?? "").split(separator: "\n")
            .compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    public func stop() async { await server.stop() }
}

/// The speaker-stream consumer of docs/relay.md (scripts/examples/speaker-wavs.py), run with the
/// `websockets` library of scripts/ws-venv (`make test` makes it: the tests have no PyPI).
public enum SpeakerConsumer {
    static var python: URL {
        let run = ProcessInfo.processInfo.environment["SFUBOT_RUN_DIR"].map { URL(fileURLWithPath: $0) } ?? S3Venv.root.appendingPathComponent(".run")
        return run.appendingPathComponent("venv-ws/bin/python")
    }

    public static var missing: String? {
        FileManager.default.isExecutableFile(atPath: python.path) ? nil : "\(python.path) missing: run scripts/ws-venv (make test does)"
    }

    /// The consumer of a relay that listens (`--ws-listen`): connects to `index`, then to each
    /// speaker it lists; ends when the relay closes the index.
    public static func connect(index: String, out: URL, arrivals: URL) throws -> ChildProcess {
        try ChildProcess(python, [S3Venv.root.appendingPathComponent("scripts/examples/speaker-wavs.py").path, out.path,
                                  "--connect", index, "--arrivals", arrivals.path])
    }

    /// Listens on 127.0.0.1:`port`, one WAV per speaker in `out`, each message's arrival in `arrivals`.
    public static func start(port: Int, out: URL, arrivals: URL) async throws -> LocalServer {
        try await LocalServer.start(python, [S3Venv.root.appendingPathComponent("scripts/examples/speaker-wavs.py").path, out.path,
                                             "--port", "\(port)", "--arrivals", arrivals.path], port: port)
    }
}
