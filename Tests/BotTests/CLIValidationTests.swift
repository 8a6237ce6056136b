import Foundation
import Testing
import TestSupport

/// Bad input and signals given to the built `sfubot` as a user gives them: each ends in one
/// clear error with the documented exit code, never a crash (132) or a hang. No Janus needed:
/// runs that get past validation fail at once against ws://127.0.0.1:1.
@Suite struct CLIValidationTests {
    typealias CLI = MediaScene.CLITests
    let key = String(repeating: "ab", count: 32)
    let nowhere = ["--janus", "ws://127.0.0.1:1", "--room", "1"]

    /// Runs sfubot; one still running after `limit` is killed and reported as such.
    static func run(_ args: [String], limit: Duration = .seconds(20)) async throws -> (run: CLI.Run, seconds: Double) {
        let p = try CLI.start(args)
        let seconds = await waitForExit(p, limit: limit)
        if p.isRunning { p.signal(SIGKILL) }
        let r = await p.finished()
        return (CLI.Run(status: r.status, out: r.outText, err: r.errText), seconds)
    }

    /// Seconds until `p` exited; `limit` if it did not.
    static func waitForExit(_ p: ChildProcess, limit: Duration) async -> Double {
        let start = ContinuousClock.now
        _ = await p.exit(within: limit)
        let elapsed = (ContinuousClock.now - start).components
        return Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
    }

    @Test("non-finite and huge numbers are usage errors naming the option and its range, not a crash",
          arguments: [
              (["record", "--out", "/tmp/sfubot-never", "--duration", "inf"], "--duration", "31536000 seconds"),
              (["record", "--out", "/tmp/sfubot-never", "--duration", "1e300"], "--duration", "31536000 seconds"),
              (["record", "--out", "/tmp/sfubot-never", "--duration", "nan"], "--duration", "31536000 seconds"),
              (["play", "--test-pattern", "--duration", "inf"], "--duration", "31536000 seconds"),
              (["play", "--test-pattern", "--duration", "1e300"], "--duration", "31536000 seconds"),
              (["load", "--duration", "inf"], "--duration", "0 to 31536000 seconds"),
              (["load", "--duration", "1e300"], "--duration", "0 to 31536000 seconds"),
              (["load", "--join-timeout", "inf"], "--join-timeout", "31536000 seconds"),
              (["load", "--stats-interval", "inf"], "--stats-interval", "31536000 seconds"),
              (["load", "--publishers", "9223372036854775807"], "--publishers", "0 to 100000"),
              (["load", "--subscribers", "9223372036854775807"], "--subscribers", "0 to 100000"),
              (["load", "--fan-out-threads", "0"], "--fan-out-threads", "1 to 256"),
              (["load", "--metrics-port", "99999"], "--metrics-port", "1 to 65535"),
              (["load", "--metrics-port", "0"], "--metrics-port", "1 to 65535"),
              (["record", "--out", "/tmp/sfubot-never", "--metrics-port", "70000"], "--metrics-port", "1 to 65535"),
              (["play", "--test-pattern", "--metrics-port", "0"], "--metrics-port", "1 to 65535"),
          ])
    func outOfRangeNumbers(args: [String], option: String, range: String) async throws {
        let (r, _) = try await Self.run(args + nowhere + ["--key-hex", key])
        #expect(r.status == 64, "\(args) → \(r.status): \(r.err)")
        let line = r.err.split(separator: "\n").first { $0.contains("Error:") } ?? ""
        #expect(line.contains(option) && line.contains(range), "\(args): \(r.err)")
    }

    @Test("a URL's port out of 1–65535 is a usage error, not a connection to the port it wraps to",
          arguments: [["record", "--out", "/tmp/sfubot-never"], ["play", "--test-pattern"], ["load"]])
    func urlPortOutOfRange(command: [String]) async throws {
        let (r, _) = try await Self.run(command + ["--janus", "ws://127.0.0.1:99999", "--room", "1", "--key-hex", key])
        #expect(r.status == 64, "\(command) → \(r.status): \(r.err)")
        #expect(r.err.contains("--janus") && r.err.contains("1 to 65535") && r.err.contains("99999"), "\(r.err)")
        let room = try await Self.run(["room", "create", "--janus", "ws://127.0.0.1:70000"])
        #expect(room.run.status == 64 && room.run.err.contains("1 to 65535"), "\(room.run.err)")
    }

    @Test("a metrics port already in use is an error before any bot joins",
          arguments: [["load"], ["record", "--out", "/tmp/sfubot-never"], ["play", "--test-pattern"]])
    func metricsPortInUse(command: [String]) async throws {
        let taken = try SilentListener()
        let (r, _) = try await Self.run(command + ["--metrics-port", "\(taken.port)", "--no-e2ee"] + nowhere)
        #expect(r.status == 78, "\(r.status): \(r.err)")
        #expect(r.err.contains("cannot serve metrics on 127.0.0.1:\(taken.port)"), "\(r.err)")
        #expect(r.err.split(separator: "\n").count == 1, "one line: \(r.err)")
    }

    @Test("agent: a metrics port already in use is an error before the config is even read")
    func agentMetricsPortInUse() async throws {
        let taken = try SilentListener()
        let (r, _) = try await Self.run(["agent", "--config", "/tmp/sfubot-never/agent.json", "--metrics-port", "\(taken.port)"])
        #expect(r.status == 78, "\(r.status): \(r.err)")
        #expect(r.err.contains("cannot serve metrics on 127.0.0.1:\(taken.port)"), "\(r.err)")
    }

    @Test("a key of the wrong length says what was given and what a key is")
    func keyLengthMessage() async throws {
        for hex in [String(repeating: "a", count: 65), String(repeating: "a", count: 63)] {
            let (r, _) = try await Self.run(["play", "--test-pattern", "--key-hex", hex] + nowhere)
            #expect(r.status == 65, "\(r.status): \(r.err)")
            #expect(r.err.contains("--key-hex has \(hex.count) characters; a call key is 64 hex characters (32 bytes)"), "\(r.err)")
            #expect(!r.err.contains(hex), "the key is not echoed")
        }
    }

    @Test("a key file other users can read gives a warning that names it; a 0600 one does not")
    func openKeyFileWarns() async throws {
        let dir = try Scene.tempDirectory("keyfile")
        let file = dir.appendingPathComponent("call.key")
        try Data(key.utf8).write(to: file)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: file.path)
        let (open, _) = try await Self.run(["play", "--test-pattern", "--key-file", file.path] + nowhere)
        #expect(open.err.contains("warning: key file \(file.path)") && open.err.contains("644"), "\(open.err)")
        #expect(!open.err.contains(key))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file.path)
        let (closed, _) = try await Self.run(["play", "--test-pattern", "--key-file", file.path] + nowhere)
        #expect(!closed.err.contains("warning"), "\(closed.err)")
        #expect(closed.status == open.status, "the warning changes nothing else")
    }

    @Test("a folder, an empty or a random file given to play is an input error (66) that says so")
    func playNonMedia() async throws {
        let dir = try Scene.tempDirectory("notmedia")
        let empty = dir.appendingPathComponent("empty.wav"), random = dir.appendingPathComponent("random.mp4")
        try Data().write(to: empty)
        try Data((0..<65536).map { _ in UInt8.random(in: 0...255) }).write(to: random)
        for path in [dir.path, empty.path, random.path] {
            let (r, _) = try await Self.run(["play", path, "--no-e2ee"] + nowhere)
            #expect(r.status == 66, "\(path) → \(r.status): \(r.err)")
            #expect(r.err == "sfubot: not a media file GStreamer can decode: \(path)\n", "\(r.err)")
        }
    }

    @Test("the first SIGTERM stops record and play at once while a server accepts and never answers",
          arguments: [["record", "--out"], ["play", "--test-pattern"]])
    func sigtermWhileConnecting(command: [String]) async throws {
        let silent = try SilentListener()
        var args = command
        if command[0] == "record" { args.append(try Scene.tempDirectory("silent").path) }
        let p = try CLI.start(args + ["--janus", "ws://127.0.0.1:\(silent.port)", "--room", "1", "--key-hex", key])
        // Until it is connecting (its signal handlers are in place by then), however slow the start.
        #expect(await silent.waitForConnection(within: .seconds(30)), "never connected")
        #expect(p.isRunning, "still connecting to a server that never answers")
        p.signal(SIGTERM)
        let seconds = await Self.waitForExit(p, limit: .seconds(30))
        if p.isRunning { p.signal(SIGKILL) }
        let r = await p.finished()
        let text = r.errText
        // The connect is cancelled, not waited out (the grace timer would end it after 15–30 s);
        // a loaded machine took 11.3 s to start and stop the process, so the bound is below 15.
        #expect(seconds < 14, "exited \(seconds) s after SIGTERM: \(text)")
        #expect(r.status == 143 && text.contains("SIGTERM"), "\(r.status): \(text)")
    }
}
