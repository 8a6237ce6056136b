import Foundation
import Janus
import Testing
import TestSupport

/// schemathesis (pinned, in the venv scripts/schemathesis-venv makes) against a running
/// `sfubot serve`: every answer of every route must be one docs/openapi.json documents, with
/// the documented content type, headers and body schema, and never a 5xx but the documented
/// 503. Valid POSTs start real jobs: Tests/Schemathesis/hooks.py moves every path the service
/// would accept into this test's folder; rooms schemathesis invents do not exist on the test's
/// Janus, so those jobs end failed.
extension MediaScene {
@Suite struct ServeSchemaTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static var schemathesis: URL {
        let run = ProcessInfo.processInfo.environment["SFUBOT_RUN_DIR"].map { URL(fileURLWithPath: $0) } ?? root.appendingPathComponent(".run")
        return run.appendingPathComponent("venv-schemathesis/bin/schemathesis")
    }

    @Test("schemathesis finds no answer of serve outside docs/openapi.json (status, content type, headers, schema, no server error)")
    func conformsToItsDocument() async throws {
        let tool = Self.schemathesis
        try #require(FileManager.default.isExecutableFile(atPath: tool.path), "\(tool.path) missing: run scripts/schemathesis-venv (make test does)")
        let dir = try Scene.tempDirectory("serve-schema")
        let sandbox = dir.appendingPathComponent("sandbox")
        try FileManager.default.createDirectory(at: sandbox, withIntermediateDirectories: true)
        let tone = try await Audio.tone(440, seconds: 1, in: dir)
        let keyFile = dir.appendingPathComponent("call.key")
        _ = FileManager.default.createFile(atPath: keyFile.path, contents: Data(String(repeating: "3c", count: 32).utf8), attributes: [.posixPermissions: 0o600])
        // One destination relays may use, so that relay jobs start too (nothing listens there).
        let relayTo = "rtp://127.0.0.1:18488"
        let serve = try await ServeProcess.start(port: 18489, in: dir, extra: ["--relay-allow", relayTo])
        defer { serve.process.signal(SIGKILL) }

        // What it serves is the document schemathesis is about to check it against.
        let served = try await serve.request("GET", "/openapi.json", auth: false)
        let docs = try Data(contentsOf: Self.root.appendingPathComponent("docs/openapi.json"))
        #expect(try JSONDecoder().decode(JSON.self, from: served.body) == JSONDecoder().decode(JSON.self, from: docs))

        var environment = ProcessInfo.processInfo.environment
        environment["SCHEMATHESIS_HOOKS"] = Self.root.appendingPathComponent("Tests/Schemathesis/hooks.py").path
        environment["SFUBOT_SCHEMA_SANDBOX"] = sandbox.path
        environment["SFUBOT_SCHEMA_MEDIA"] = tone.path
        environment["SFUBOT_SCHEMA_KEY_FILE"] = keyFile.path
        environment["SFUBOT_SCHEMA_RELAY_TO"] = relayTo
        environment["NO_COLOR"] = "1"
        let started = ContinuousClock.now
        let run = try ChildProcess(tool, [
            "run", "http://127.0.0.1:\(serve.port)/openapi.json",
            "--header", "Authorization: Bearer \(serve.token)",
            "--checks", "not_a_server_error,status_code_conformance,content_type_conformance,response_headers_conformance,response_schema_conformance",
            "--phases", "examples,coverage,fuzzing", "--max-examples", "50", "--workers", "1", "--seed", "12",
            "--request-timeout", "30", "--suppress-health-check", "all",
        ], environment: environment)
        guard let status = await run.exit(within: .seconds(300)) else {
            run.signal(SIGKILL)
            Issue.record("schemathesis did not finish within 300 s")
            return
        }
        let output = await run.finished()
        let lines = output.outText.split(separator: "\n")
        let summary = lines.last { $0.contains("passed") || $0.contains("failed") || $0.contains("error") } ?? "no summary"
        print("serve schema: schemathesis \(summary.trimmingCharacters(in: CharacterSet(charactersIn: "= "))) in \(ContinuousClock.now - started)")
        #expect(status == 0, "schemathesis found problems:\n\(lines.suffix(120).joined(separator: "\n"))\n\(output.errText)")

        // Jobs did start (into the sandbox), and the service is none the worse for the run.
        let jobs = try await serve.request("GET", "/v1/recordings").list() + serve.request("GET", "/v1/playbacks").list()
        print("serve schema: \(jobs.count) jobs started, states \(Dictionary(grouping: jobs, by: { $0["state"] as? String ?? "?" }).mapValues(\.count))")
        #expect(try await serve.request("GET", "/healthz", auth: false).status == 200)
        serve.process.signal(SIGTERM)
        #expect(await serve.process.exit(within: .seconds(30)) == 0)
    }
}
}
