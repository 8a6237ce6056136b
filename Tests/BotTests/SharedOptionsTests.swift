import Foundation
import Testing
import TestSupport

/// The options every command shares are spelled the same, with the same defaults: they come
/// from one group each (Sources/sfubot/Options), and `--help` is what a user reads.
@Suite struct SharedOptionsTests {
    /// One option's help entry: from its line to the next option's, whitespace folded.
    static func entry(_ option: String, in help: String) -> String? {
        let lines = help.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard let start = lines.firstIndex(where: { $0.trimmingCharacters(in: .whitespaces).hasPrefix(option + " ") || $0.contains(", " + option + " ") || $0.trimmingCharacters(in: .whitespaces) == option || $0.contains(option + ",") }) else { return nil }
        var text = lines[start]
        for line in lines[(start + 1)...] {
            if line.trimmingCharacters(in: .whitespaces).hasPrefix("-") || line.isEmpty { break }
            text += " " + line.trimmingCharacters(in: .whitespaces)
        }
        return text.split(whereSeparator: \.isWhitespace).joined(separator: " ")
    }

    static func help(_ command: [String]) async throws -> String {
        let r = try await SfubotProcess.run(command + ["--help"])
        #expect(r.status == 0, "\(command): \(r.err)")
        return r.out
    }

    @Test("record, play, load, serve and room create take --janus, --api-secret and --janus-token alike")
    func janusOptions() async throws {
        for command in [["record"], ["play"], ["relay"], ["load", "run"], ["serve"], ["room", "create"]] {
            let help = try await Self.help(command)
            let janus = Self.entry("--janus", in: help)
            #expect(janus?.contains("(default: ws://127.0.0.1:8188)") == true, "\(command): \(janus ?? "no --janus")")
            #expect(Self.entry("--api-secret", in: help) != nil, "\(command)")
            #expect(Self.entry("--janus-token", in: help) != nil, "\(command)")
            #expect(Self.entry("-v", in: help)?.contains("-vv: trace") == true, "\(command)")
        }
    }

    @Test("every participant command and serve come back for the same --rejoin-timeout, 600 s")
    func rejoinTimeout() async throws {
        for command in [["record"], ["play"], ["load", "run"], ["serve"]] {
            let entry = Self.entry("--rejoin-timeout", in: try await Self.help(command))
            #expect(entry?.contains("(default: 600.0)") == true, "\(command): \(entry ?? "no --rejoin-timeout")")
        }
    }

    @Test("--pipelines, -v and the metrics listener are the same in every command that runs media")
    func mediaOptions() async throws {
        for command in [["record"], ["play"], ["relay"], ["load", "run"], ["serve"], ["agent"], ["mjr", "decrypt"]] {
            let help = try await Self.help(command)
            #expect(Self.entry("--pipelines", in: help)?.contains("$SFUBOT_PIPELINES") == true, "\(command)")
            #expect(Self.entry("-v", in: help)?.contains("Log more") == true, "\(command)")
            if command != ["mjr", "decrypt"] {
                #expect(Self.entry("--metrics-port", in: help) != nil, "\(command)")
            }
        }
    }

    @Test("the old --token still reaches Janus as --janus-token")
    func oldTokenName() async throws {
        // Parsed, not refused: a bad room makes it fail later, at validation of what it means.
        let r = try await SfubotProcess.run(["record", "--token", "t", "--no-e2ee", "--out", "/nonexistent/x", "--room", "1", "--janus", "ws://127.0.0.1:9", "--rejoin-timeout", "0"])
        #expect(!r.err.contains("Unknown option"), "\(r.err)")
    }
}

/// The ICE options: one group in every command that runs a participant; no credential default.
@Suite struct ICEOptionsHelpTests {
    @Test("record, play, load, serve and agent take the same ICE options; no credential shows a default")
    func iceOptions() async throws {
        for command in [["record"], ["play"], ["relay"], ["load", "run"], ["serve"], ["agent"]] {
            let help = try await SharedOptionsTests.help(command)
            #expect(SharedOptionsTests.entry("--ice-server", in: help)?.contains("turn:HOST") == true, "\(command)")
            #expect(SharedOptionsTests.entry("--ice-transport-policy", in: help)?.contains("(default: all)") == true, "\(command)")
            let ca = SharedOptionsTests.entry("--turn-ca-file", in: help)
            #expect(ca?.contains("turns:") == true && ca?.contains("system's trust store") == true, "\(command): \(ca ?? "no --turn-ca-file")")
            #expect(SharedOptionsTests.entry("--ice-server", in: help)?.contains("turns:HOST") == true, "\(command)")
            for option in ["--turn-username", "--turn-password", "--turn-credentials-file", "--turn-secret-file", "--turn-ca-file"] {
                let entry = SharedOptionsTests.entry(option, in: help)
                #expect(entry != nil && entry?.contains("default:") == false, "\(command) \(option): \(entry ?? "missing")")
            }
        }
    }

    @Test("bad ICE settings are usage errors that never print the TURN password",
          arguments: [
              (["--ice-server", "turns:127.0.0.1:5349", "--turn-username", "u", "--turn-password", "hunter2", "--turn-ca-file", "/nonexistent/ca.pem"],
               "--turn-ca-file /nonexistent/ca.pem: no such file"),
              (["--ice-server", "turns:127.0.0.1:5349?transport=udp", "--turn-username", "u", "--turn-password", "hunter2"], "TLS over TCP"),
              (["--ice-server", "turn:127.0.0.1", "--turn-password", "hunter2"], "--turn-username"),
              (["--ice-server", "turn:127.0.0.1"], "credentials"),
              (["--ice-transport-policy", "relay"], "TURN server"),
              (["--ice-transport-policy", "nearest", "--turn-password", "hunter2"], "all or relay"),
              (["--ice-server", "turn:127.0.0.1", "--turn-credentials-file", "/nonexistent/turn"], "--turn-credentials-file"),
          ])
    func badSettings(extra: [String], says: String) async throws {
        let r = try await SfubotProcess.run(["record", "--no-e2ee", "--out", "/tmp/sfubot-never", "--room", "1", "--janus", "ws://127.0.0.1:1"] + extra)
        #expect(r.status == 64, "\(extra): \(r.status) \(r.err)")
        #expect(r.err.contains(says), "\(r.err)")
        #expect(!r.err.contains("hunter2") && !r.out.contains("hunter2"))
    }

    @Test("a --turn-ca-file that is no PEM certificate is a usage error for record, play, serve and agent; load refuses turns:")
    func badCAFile() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sfubot-ca-cli-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("ca.pem").path
        try Data("hunter2 is no certificate\n".utf8).write(to: URL(fileURLWithPath: file))
        let ice = ["--ice-server", "turns:127.0.0.1:5349", "--turn-username", "u", "--turn-password", "hunter2", "--turn-ca-file", file]
        for command in [["record", "--no-e2ee", "--out", "/tmp/sfubot-never", "--room", "1", "--janus", "ws://127.0.0.1:1"],
                        ["play", "--no-e2ee", "--room", "1", "--janus", "ws://127.0.0.1:1", "--test-pattern"],
                        ["serve", "--token-file", "/nonexistent/token"],
                        ["agent", "--config", "/nonexistent/agent.json"]] {
            let r = try await SfubotProcess.run(command + ice)
            #expect(r.status == 64, "\(command[0]): \(r.status) \(r.err)")
            #expect(r.err.contains("--turn-ca-file \(file): holds no PEM certificate"), "\(command[0]): \(r.err)")
            // The file is not a secret, but its contents are never echoed either.
            #expect(!r.err.contains("hunter2"), "\(r.err)")
        }
        let r = try await SfubotProcess.run(["load", "run", "--no-e2ee", "--room", "1", "--janus", "ws://127.0.0.1:1", "--publishers", "1",
                                             "--ice-server", "turns:127.0.0.1:5349", "--turn-username", "u", "--turn-password", "hunter2"])
        #expect(r.status == 64 && r.err.contains("sfubot load does not take turns:"), "\(r.status) \(r.err)")
    }

    @Test("a credentials or secret file others can read is refused")
    func openFileRefused() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sfubot-ice-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("secret").path
        try Data("hunter2\n".utf8).write(to: URL(fileURLWithPath: file))
        chmod(file, 0o644)
        let r = try await SfubotProcess.run(["record", "--no-e2ee", "--out", "/tmp/sfubot-never", "--room", "1", "--janus", "ws://127.0.0.1:1",
                                             "--ice-server", "turn:127.0.0.1", "--turn-secret-file", file])
        #expect(r.status == 64, "\(r.err)")
        #expect(r.err.contains("--turn-secret-file") && !r.err.contains("hunter2"), "\(r.err)")
    }
}
