import Crypto
import Foundation
import ObjectStore
import Testing
import TestSupport

/// `sfubot serve --storage ... --webhook-url ...` against moto's S3 server and a receiver that
/// verifies every signature with the standardwebhooks library (scripts/s3-venv): a recording
/// that ends is uploaded (every file, manifest included), verified, deleted locally, and
/// announced by a signed `job.finished` naming each object with its size and SHA-256.
extension MediaScene {
@Suite struct ServePublishingTests {
    @Test("a finished recording's folder lands in the bucket, the local copy goes, job.started and job.finished arrive signed")
    func recordingUploadedAndAnnounced() async throws {
        if let missing = S3Venv.missing { Issue.record(Comment(rawValue: missing)); return }
        let dir = try Scene.tempDirectory("serve-publish")
        let moto = try await LocalServer.moto(port: 18631)
        let secret = dir.appendingPathComponent("whsec"), log = dir.appendingPathComponent("received.jsonl")
        _ = FileManager.default.createFile(atPath: secret.path, contents: Data(("whsec_" + Data(repeating: 42, count: 32).base64EncodedString()).utf8),
                                           attributes: [.posixPermissions: 0o600])
        let receiver: LocalServer
        do { receiver = try await LocalServer.python("webhook_receiver.py", ["18632", secret.path, log.path], port: 18632) } catch {
            await moto.stop()
            throw error
        }
        // Stopped whatever happens: a server left running would outlive the test process.
        do { try await run(dir, moto: moto, secret: secret, log: log) } catch { Issue.record(error) }
        await receiver.stop()
        await moto.stop()
    }

    func run(_ dir: URL, moto: LocalServer, secret: URL, log: URL) async throws {
        let key = String(repeating: "5a", count: 32)
        let tone = try await Audio.tone(440, seconds: 2, in: dir)
        let credentials = dir.appendingPathComponent("s3.credentials")
        _ = FileManager.default.createFile(atPath: credentials.path, contents: Data("AWS_ACCESS_KEY_ID=AKIDSERVE\nAWS_SECRET_ACCESS_KEY=serve-secret\n".utf8),
                                           attributes: [.posixPermissions: 0o600])
        let client = S3Client(location: try S3Location(storage: "s3://sfubot-serve/site", endpoint: moto.endpoint, environment: [:]),
                              credentials: S3Credentials(accessKeyID: "AKIDSERVE", secretAccessKey: "serve-secret"))
        try await client.createBucket()

        let serve = try await ServeProcess.start(port: 18633, in: dir, extra: [
            "--storage", "s3://sfubot-serve/site", "--s3-endpoint", moto.endpoint, "--s3-credentials-file", credentials.path,
            "--webhook-url", "http://127.0.0.1:18632/hooks", "--webhook-secret-file", secret.path, "-v",
        ])
        defer { serve.process.signal(SIGKILL) }
        let room = try await Scene.createRoom()
        let out = dir.appendingPathComponent("rec")
        let rec = try await serve.request("POST", "/v1/recordings", json: ["room": room, "key": ["hex": key], "out": out.path])
        let id = try #require(try rec.json()["id"] as? String, "\(rec.text)")
        let play = try await serve.request("POST", "/v1/playbacks", json: ["room": room, "key": ["hex": key], "file": tone.path, "loop": true])
        let playID = try #require(try play.json()["id"] as? String, "\(play.text)")
        _ = try await serve.waitFor("/v1/recordings/\(id)", within: .seconds(60)) { s in
            ((s["feeds"] as? [[String: Any]]) ?? []).contains { ($0["framesOpened"] as? Int ?? 0) > 100 }
        }
        // A pause and a resume, each a signed event.
        #expect(try await serve.request("POST", "/v1/recordings/\(id)/pause").json()["paused"] as? Bool == true)
        #expect(try await serve.request("POST", "/v1/recordings/\(id)/resume").json()["paused"] as? Bool == false)
        #expect(try await serve.request("DELETE", "/v1/recordings/\(id)").json()["state"] as? String == "done")
        _ = try await serve.request("DELETE", "/v1/playbacks/\(playID)")

        // job.finished comes once every file is uploaded and verified.
        func events() -> [[String: Any]] {
            ((try? String(contentsOf: log, encoding: .utf8)) ?? "").split(separator: "\n")
                .compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        }
        let finished = await eventually(within: 120) { events().contains { $0["id"] as? String == "\(id).finished" } }
        if !finished {
            serve.process.signal(SIGKILL)
            let log = await serve.process.finished().errText
            let listing = try? await ChildProcess.run("/usr/bin/find", [serve.stateDir.path, out.path, "-ls"]).outText
            print("serve publishing: files:\n\(listing ?? "?")\nserve said:\n\(log.suffix(20000))")
            Issue.record("no job.finished for \(id): \(events())")
            return
        }
        let all = events()
        #expect(all.allSatisfy { $0["valid"] as? Bool == true }, "\(all)")
        #expect(all.contains { $0["id"] as? String == "\(id).started.0" && $0["type"] as? String == "job.started" })
        #expect(all.contains { $0["id"] as? String == "\(playID).finished" })
        #expect(all.contains { $0["id"] as? String == "\(id).paused.1" && $0["type"] as? String == "job.paused" }, "\(all.map { $0["id"] ?? "" })")
        #expect(all.contains { $0["id"] as? String == "\(id).resumed.1" && $0["type"] as? String == "job.resumed" })
        let event = try #require(all.first { $0["id"] as? String == "\(id).finished" })
        let files = try #require((event["data"] as? [String: Any])?["files"] as? [[String: Any]])
        let names = files.compactMap { $0["name"] as? String }
        print("serve publishing: job.finished names \(files.map { "\($0["name"] ?? "?") (\($0["size"] ?? "?") bytes)" }.joined(separator: ", "))")
        #expect(names.contains("manifest.json") && names.count >= 2, "\(names)")
        for file in files {
            let name = try #require(file["name"] as? String)
            let object = try await client.get(key: "site/\(id)/\(name)")
            #expect(object.count == file["size"] as? Int, "\(name)")
            #expect(SHA256.hash(data: object).map { String(format: "%02x", $0) }.joined() == file["sha256"] as? String, "\(name)")
            #expect(file["url"] as? String == client.location.url(key: "site/\(id)/\(name)"))
            #expect(!FileManager.default.fileExists(atPath: out.appendingPathComponent(name).path), "\(name) deleted locally once verified")
        }
        let manifest = try JSONSerialization.jsonObject(with: Data(try await client.get(key: "site/\(id)/manifest.json"))) as? [String: Any]
        #expect(manifest?["ended"] != nil)
        let metrics = try await serve.request("GET", "/metrics", auth: false).text
        #expect(metrics.contains("sfubot_uploads_total") && metrics.contains("sfubot_webhooks_delivered_total"))
    }
}
}
