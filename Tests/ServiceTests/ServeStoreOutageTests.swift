import Crypto
import Foundation
import ObjectStore
import Testing
import TestSupport

/// The store failing for 30 s while a recording ends, then back (issue 27): moto's port refused
/// with iptables inside the test's namespace (moto keeps its bucket meanwhile: a stopped moto
/// would forget it). Nothing may be lost: every file stays local and the job shows its uploads
/// pending until the store is back; then every file is uploaded, verified, and only then
/// deleted; each file's first failure is a signed `upload.failed`, the end one `job.finished`.
extension MediaScene {
@Suite struct ServeStoreOutageTests {
    static let motoPort = 18651, receiverPort = 18652, servePort = 18653

    @Test("the store down for 30 s as a recording ends: its files wait locally, shown pending, then all uploaded and verified, upload.failed and job.finished signed")
    func storeDownThenBack() async throws {
        if let missing = S3Venv.missing { Issue.record(Comment(rawValue: missing)); return }
        let dir = try Scene.tempDirectory("serve-store-down")
        let moto = try await LocalServer.moto(port: Self.motoPort)
        let secret = dir.appendingPathComponent("whsec"), log = dir.appendingPathComponent("received.jsonl")
        _ = FileManager.default.createFile(atPath: secret.path, contents: Data(("whsec_" + Data(repeating: 7, count: 32).base64EncodedString()).utf8),
                                           attributes: [.posixPermissions: 0o600])
        let receiver: LocalServer
        do {
            receiver = try await LocalServer.python("webhook_receiver.py", ["\(Self.receiverPort)", secret.path, log.path], port: Self.receiverPort)
        } catch {
            await moto.stop()
            throw error
        }
        // The rule and the servers go whatever happens.
        do { try await run(dir, moto: moto, secret: secret, log: log) } catch { Issue.record(error) }
        try? await Faults.allowTCP(port: Self.motoPort)
        await receiver.stop()
        await moto.stop()
    }

    func run(_ dir: URL, moto: LocalServer, secret: URL, log: URL) async throws {
        let key = String(repeating: "6b", count: 32)
        let tone = try await Audio.tone(440, seconds: 2, in: dir)
        let credentials = dir.appendingPathComponent("s3.credentials")
        _ = FileManager.default.createFile(atPath: credentials.path, contents: Data("AWS_ACCESS_KEY_ID=AKIDDOWN\nAWS_SECRET_ACCESS_KEY=down-secret\n".utf8),
                                           attributes: [.posixPermissions: 0o600])
        let client = S3Client(location: try S3Location(storage: "s3://sfubot-down/site", endpoint: moto.endpoint, environment: [:]),
                              credentials: S3Credentials(accessKeyID: "AKIDDOWN", secretAccessKey: "down-secret"))
        try await client.createBucket()
        let serve = try await ServeProcess.start(port: Self.servePort, in: dir, extra: [
            "--storage", "s3://sfubot-down/site", "--s3-endpoint", moto.endpoint, "--s3-credentials-file", credentials.path,
            "--webhook-url", "http://127.0.0.1:\(Self.receiverPort)/hooks", "--webhook-secret-file", secret.path,
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

        // The store goes down; the recording ends meanwhile.
        try await Faults.refuseTCP(port: Self.motoPort)
        let down = Date()
        #expect(try await serve.request("DELETE", "/v1/recordings/\(id)").json()["state"] as? String == "done")
        _ = try await serve.request("DELETE", "/v1/playbacks/\(playID)")
        func events() -> [[String: Any]] {
            ((try? String(contentsOf: log, encoding: .utf8)) ?? "").split(separator: "\n")
                .compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        }
        func uploads() async -> [String: Any]? { try? await serve.request("GET", "/v1/recordings/\(id)").json()["uploads"] as? [String: Any] }
        // Every file tried once and failed: each has its upload.failed, the job shows them pending.
        let allFailed = await eventually(within: 25) {
            guard let u = await uploads(), let pending = u["pending"] as? Int, pending > 0 else { return false }
            return events().filter { $0["type"] as? String == "upload.failed" }.count >= pending
        }
        let during = await uploads() ?? [:]
        #expect(allFailed, "uploads \(during), events \(events().map { $0["id"] ?? "" })")
        let pending = during["pending"] as? Int ?? 0
        #expect(pending >= 2 && during["uploaded"] as? Int == 0, "\(during)")
        #expect((during["lastError"] as? String)?.contains("cannot reach the object store") == true, "\(during)")
        let local = JobPublishingProbe.files(out)
        #expect(local.count == pending, "every file of the folder kept locally while pending: \(local)")
        #expect(!events().contains { $0["type"] as? String == "job.finished" && $0["id"] as? String == "\(id).finished" }, "job.finished waits for the store")
        let listing = try? await client.send("GET", key: nil, query: [("prefix", "site/\(id)/")]).text
        #expect(listing == nil, "the store is refused: nothing can be listed")

        try await Task.sleep(for: .seconds(max(0, 30 - Date().timeIntervalSince(down))))
        try await Faults.allowTCP(port: Self.motoPort)
        let back = Date()
        let finished = await eventually(within: 120) { events().contains { $0["id"] as? String == "\(id).finished" } }
        let stuck = finished ? [:] : await uploads() ?? [:]
        try #require(finished, "no job.finished after the store came back: uploads \(stuck)")
        print("serve store outage: store refused \(String(format: "%.1f", back.timeIntervalSince(down))) s; \(pending) file(s) pending; "
              + "job.finished \(String(format: "%.1f", Date().timeIntervalSince(back))) s after the store was back")

        let all = events()
        #expect(all.allSatisfy { $0["valid"] as? Bool == true }, "\(all)")
        let failed = all.filter { $0["type"] as? String == "upload.failed" }
        let event = try #require(all.first { $0["id"] as? String == "\(id).finished" })
        let data = try #require(event["data"] as? [String: Any])
        let files = try #require(data["files"] as? [[String: Any]])
        #expect(data["missing"] == nil, "nothing lost: \(data)")
        #expect(files.count == pending, "every pending file is in job.finished")
        for file in files {
            let name = try #require(file["name"] as? String)
            let objectKey = "site/\(id)/\(name)"
            let object = try await client.get(key: objectKey)
            #expect(object.count == file["size"] as? Int, "\(name)")
            #expect(SHA256.hash(data: object).map { String(format: "%02x", $0) }.joined() == file["sha256"] as? String, "\(name)")
            #expect(!FileManager.default.fileExists(atPath: out.appendingPathComponent(name).path), "\(name) deleted locally once verified")
            let reports = failed.compactMap { $0["data"] as? [String: Any] }.filter { $0["key"] as? String == objectKey }
            #expect(reports.first?["attempts"] as? Int == 1 && reports.first?["job"] as? String == id, "\(name): its first failure reported: \(reports)")
            #expect((reports.first?["reason"] as? String)?.contains("cannot reach") == true, "\(reports)")
        }
        let after = await uploads() ?? [:]
        #expect(after["pending"] as? Int == 0 && after["uploaded"] as? Int == pending && after["lastError"] == nil, "\(after)")
        #expect((after["failedTries"] as? Int ?? 0) >= pending, "\(after)")
        let manifest = try JSONSerialization.jsonObject(with: Data(try await client.get(key: "site/\(id)/manifest.json"))) as? [String: Any]
        #expect(manifest?["ended"] != nil)
    }
}
}

/// The regular files below a recording's folder, as the test sees them.
enum JobPublishingProbe {
    static func files(_ folder: URL) -> [String] {
        guard let walker = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: [.isRegularFileKey]) else { return [] }
        return walker.compactMap { item -> String? in
            guard let url = item as? URL, (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true else { return nil }
            return url.path
        }
    }
}
