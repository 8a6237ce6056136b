import AsyncHTTPClient
public import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import Testing

/// `sfubot serve` as a test drives it: the built binary, started with its own token file,
/// state folder and port, reached over HTTP only.
public struct ServeProcess: Sendable {
    public let port: Int
    public let token: String
    public let tokenFile: URL
    public let stateDir: URL
    public let process: ChildProcess

    /// Starts serve and waits until /healthz answers. Its --output-root and --media-root are
    /// `dir` unless given. `launcher` runs before it (a command that ends by exec'ing its arguments).
    public static func start(port: Int, in dir: URL, stateDir: URL? = nil, token: String? = nil, outputRoot: URL? = nil, mediaRoot: URL? = nil,
                      janus: String? = nil, extra: [String] = [], launcher: [String] = []) async throws -> ServeProcess {
        let token = token ?? (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        let tokenFile = dir.appendingPathComponent("token")
        if !FileManager.default.fileExists(atPath: tokenFile.path) {
            _ = FileManager.default.createFile(atPath: tokenFile.path, contents: Data(token.utf8), attributes: [.posixPermissions: 0o600])
        }
        let state = stateDir ?? dir.appendingPathComponent("state")
        let args = [
            "serve", "--listen", "127.0.0.1:\(port)", "--token-file", tokenFile.path, "--janus", janus ?? Scene.janusURL!,
            "--state-dir", state.path, "--output-root", (outputRoot ?? dir).path, "--media-root", (mediaRoot ?? dir).path,
        ] + extra
        let p = try launcher.isEmpty ? ChildProcess(SfubotProcess.binary, args)
            : ChildProcess(launcher[0], Array(launcher.dropFirst()) + [SfubotProcess.binary.path] + args)
        let serve = ServeProcess(port: port, token: token, tokenFile: tokenFile, stateDir: state, process: p)
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            if let r = try? await serve.request("GET", "/healthz", auth: false), r.status == 200 { return serve }
            guard p.isRunning else {
                let f = await p.finished()
                throw PipelineRunError(message: "serve exited \(f.status): \(f.errText)")
            }
            try await Task.sleep(for: .milliseconds(200))
        }
        p.signal(SIGKILL)
        throw PipelineRunError(message: "serve did not answer /healthz within 30 s")
    }

    public struct Answer: Sendable {
        public var status: Int
        public var body: Data
        public var headers: [(String, String)] = []
        public func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name.lowercased() }?.1 }
        public var text: String { String(decoding: body, as: UTF8.self) }
        public func json() throws -> [String: Any] {
            try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any], "not a JSON object: \(text)")
        }
        public func list() throws -> [[String: Any]] {
            try #require(try JSONSerialization.jsonObject(with: body) as? [[String: Any]], "not a JSON array: \(text)")
        }
    }

    public func request(_ method: String, _ path: String, json: [String: Any]? = nil, body: Data? = nil, auth: Bool = true,
                 token: String? = nil) async throws -> Answer {
        var r = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
        r.method = .init(rawValue: method)
        if auth { r.headers.add(name: "Authorization", value: "Bearer \(token ?? self.token)") }
        if let json { r.body = .bytes(ByteBuffer(data: try JSONSerialization.data(withJSONObject: json))) }
        if let body { r.body = .bytes(ByteBuffer(data: body)) }
        r.headers.add(name: "Content-Type", value: "application/json")
        let response = try await HTTPClient.shared.execute(r, timeout: .seconds(60))
        let bytes = try await response.body.collect(upTo: 16 << 20)
        return Answer(status: Int(response.status.code), body: Data(buffer: bytes), headers: response.headers.map { ($0.name, $0.value) })
    }

    /// Polls a job until `done` holds for it (or the time is up); returns its last state.
    public func waitFor(_ path: String, within limit: Duration = .seconds(30), _ done: ([String: Any]) -> Bool) async throws -> [String: Any] {
        let deadline = ContinuousClock.now + limit
        var last: [String: Any] = [:]
        while ContinuousClock.now < deadline {
            last = try await request("GET", path).json()
            if done(last) { return last }
            try await Task.sleep(for: .milliseconds(300))
        }
        return last
    }

    /// The value of a Prometheus sample line `name{labels} value` (summed over label sets that
    /// contain `matching`).
    public func metric(_ name: String, matching: String = "") async throws -> Double {
        let text = try await request("GET", "/metrics", auth: false).text
        return text.split(separator: "\n").filter { !$0.hasPrefix("#") }.reduce(0.0) { sum, line in
            let parts = line.split(separator: " ")
            guard parts.count >= 2, parts[0] == name || parts[0].hasPrefix(name + "{"), matching.isEmpty || parts[0].contains(matching),
                  let v = Double(parts[1]) else { return sum }
            return sum + v
        }
    }
}
