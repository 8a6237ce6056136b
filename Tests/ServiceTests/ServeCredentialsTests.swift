import Foundation
import Janus
import Testing
import TestSupport

/// Credentials per allowed Janus: `--api-secret` goes to `--janus` alone; another allowed Janus
/// gets only what `--janus-credentials` gives it.
extension MediaScene {
@Suite struct ServeCredentialsTests {
    let key = String(repeating: "2f", count: 32)

    @Test("a second Janus wanting the same secret as --janus is refused it; given its own in --janus-credentials, its job runs")
    func eachJanusGetsOnlyItsOwnSecret() async throws {
        let dir = try Scene.tempDirectory("serve-creds")
        let secret = "shared-looking-secret"
        try await OwnJanus.with(port: 8213, in: dir, apiSecret: secret) { other in
            let session = try await JanusSession.connect(url: other.url, options: .init(apiSecret: secret), logger: Scene.logger)
            let room = try await VideoRoom.createRoom(try await session.attach(plugin: VideoRoom.plugin))
            await session.close()
            let tone = try await Audio.tone(440, seconds: 3, in: dir)

            // Without credentials for it: the default Janus's secret must not reach it, so it refuses the job.
            var serve = try await ServeProcess.start(port: 18505, in: dir, extra: ["--api-secret", secret, "--janus-allow", other.url])
            let bare = try await serve.request("POST", "/v1/playbacks", json: ["room": room, "janus": other.url, "key": ["hex": key], "file": tone.lastPathComponent, "loop": true])
            let bareID = try #require(try bare.json()["id"] as? String, "\(bare.text)")
            let refused = try await serve.waitFor("/v1/playbacks/\(bareID)", within: .seconds(20)) { s in
                s["state"] as? String == "failed" || (s["lastError"] as? String) != nil
            }
            #expect(refused["state"] as? String != "running", "the other Janus got --api-secret: \(refused)")
            serve.process.signal(SIGKILL)
            _ = await serve.process.exit()

            // With its own entry, the job runs.
            let creds = dir.appendingPathComponent("janus-credentials.json")
            _ = FileManager.default.createFile(atPath: creds.path, contents: Data(#"{"\#(other.url)": {"api_secret": "\#(secret)"}}"#.utf8),
                                           attributes: [.posixPermissions: 0o600])
            serve = try await ServeProcess.start(port: 18506, in: dir, stateDir: dir.appendingPathComponent("state2"), token: serve.token,
                                                 extra: ["--janus-allow", other.url, "--janus-credentials", creds.path])
            defer { serve.process.signal(SIGKILL) }
            let ok = try await serve.request("POST", "/v1/playbacks", json: ["room": room, "janus": other.url, "key": ["hex": key], "file": tone.lastPathComponent, "loop": true])
            let okID = try #require(try ok.json()["id"] as? String, "\(ok.text)")
            let running = try await serve.waitFor("/v1/playbacks/\(okID)", within: .seconds(20)) { $0["state"] as? String == "running" }
            #expect(running["state"] as? String == "running", "\(running)")

            // A credentials file others can read is refused at start.
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: creds.path)
            let loose = try await ChildProcess.run(SfubotProcess.binary.path, [
                "serve", "--listen", "127.0.0.1:18507", "--token-file", serve.tokenFile.path, "--janus", Scene.janusURL!,
                "--state-dir", dir.appendingPathComponent("state3").path, "--janus-allow", other.url, "--janus-credentials", creds.path])
            #expect(loose.status == 78 && loose.errText.contains("chmod 600"), "\(loose.status): \(loose.errText)")
        }
    }
}
}
