import Crypto
import Foundation
import ObjectStore
@testable import Service
import Testing
import TestSupport

/// `sfubot serve` alone (no `--database`) uploading a finished recording through its task queue,
/// with no Janus: the recording is a fake finished folder, ended by publishing on the serve's
/// state folder (its record kept as a serve keeps it) before serve starts. The store fails
/// first (a bucket that does not exist), serve is stopped and started again with the right
/// one: the files wait locally with their tries, shown pending, then are uploaded, verified and
/// only then deleted; `sfubot_upload_queue_depth` counts them meanwhile.
@Suite(.serialized) struct ServeUploadRestartTests {
    static let motoPort = 18617, servePort = 18618

    @Test("serve's upload fails (no such bucket), the files kept and shown pending with their tries; after a restart with the right bucket every file is in the bucket, equal, and gone locally")
    func failsThenRestarted() async throws {
        if let missing = S3Venv.missing { Issue.record(Comment(rawValue: missing)); return }
        let dir = try Scene.tempDirectory("serve-upload-restart")
        defer { try? FileManager.default.removeItem(at: dir) }
        let moto = try await LocalServer.moto(port: Self.motoPort)
        do { try await run(dir, moto: moto) } catch { Issue.record(error) }
        await moto.stop()
    }

    func run(_ dir: URL, moto: LocalServer) async throws {
        let credentials = dir.appendingPathComponent("s3.credentials")
        _ = FileManager.default.createFile(atPath: credentials.path, contents: Data("AWS_ACCESS_KEY_ID=AKIDRESTART\nAWS_SECRET_ACCESS_KEY=restart-secret\n".utf8),
                                           attributes: [.posixPermissions: 0o600])
        let client = S3Client(location: try S3Location(storage: "s3://sfubot-restart/site", endpoint: moto.endpoint, environment: [:]),
                              credentials: S3Credentials(accessKeyID: "AKIDRESTART", secretAccessKey: "restart-secret"))
        try await client.createBucket()
        let state = dir.appendingPathComponent("state"), out = dir.appendingPathComponent("rec")
        let files = try [LocalUploadTests.file(out, "audio-1.mka", bytes: 30_000), LocalUploadTests.file(out, "manifest.json", bytes: 200)]

        // The recording as a serve leaves it when it ends: its record done, its files queued.
        let id = "rec-restart1"
        let spec = try JSONDecoder().decode(JobSpec.self, from: Data(#"{"kind": "recording", "room": 1234, "key": {"none": true}, "out": "\#(out.path)", "loop": false}"#.utf8))
        try JobStore(stateDirectory: state).save(JobStore.Record(id: id, spec: spec, created: Date(), resumes: 0,
                                                                  outcome: Job.Outcome(state: .done, ended: Date(), error: nil), state: "done"))
        let seeding = try JobPublishing(stateDirectory: state, storage: client, webhook: nil, logger: LocalUploadTests.log)
        try await LocalUploadTests.ended(seeding, id, out)

        func serve(bucket: String, token: String? = nil) async throws -> ServeProcess {
            try await ServeProcess.start(port: Self.servePort, in: dir, stateDir: state, token: token, janus: "ws://127.0.0.1:9", extra: [
                "--storage", "s3://\(bucket)/site", "--s3-endpoint", moto.endpoint, "--s3-credentials-file", credentials.path,
            ])
        }
        func uploads(_ s: ServeProcess) async -> [String: Any] {
            (try? await s.request("GET", "/v1/recordings/\(id)").json()["uploads"] as? [String: Any]) ?? [:]
        }
        let first = try await serve(bucket: "sfubot-nosuch")
        defer { first.process.signal(SIGKILL) }
        let failed = await eventually(within: 30) { (await uploads(first)["failedTries"] as? Int ?? 0) >= 2 }
        let during = await uploads(first)
        #expect(failed && during["pending"] as? Int == 2 && during["uploaded"] as? Int == 0, "\(during)")
        #expect((during["lastError"] as? String)?.contains("404") == true, "\(during)")
        #expect(await eventually(within: 10) { (try? await first.metric("sfubot_upload_queue_depth")) == 2 }, "the pending uploads of this instance")
        first.process.signal(SIGTERM)
        _ = await first.process.finished()
        #expect(files.allSatisfy { FileManager.default.fileExists(atPath: $0.path) }, "a failed upload never loses a file")

        let second = try await serve(bucket: "sfubot-restart", token: first.token)
        defer { second.process.signal(SIGKILL) }
        let done = await eventually(within: 60) { await uploads(second)["pending"] as? Int == 0 }
        let after = await uploads(second)
        #expect(done && after["uploaded"] as? Int == 2 && (after["failedTries"] as? Int ?? 0) >= 2 && after["lastError"] == nil, "\(after)")
        for f in files {
            let name = URL(fileURLWithPath: f.path).lastPathComponent
            #expect(LocalUploadTests.sha256(try await client.get(key: "site/\(id)/\(name)")) == f.sha256, "\(name)")
            #expect(!FileManager.default.fileExists(atPath: f.path), "\(name) deleted locally once verified")
        }
        #expect(await eventually(within: 10) { (try? await second.metric("sfubot_upload_queue_depth")) == 0 })
        second.process.signal(SIGTERM)
        _ = await second.process.finished()
    }
}
