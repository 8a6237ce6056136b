import Crypto
import Foundation
import ObjectStore
import Testing
import TestSupport

/// A recording's uploads known to the whole cluster (`job_uploads`): the instance that queued
/// them may die before the store is back; another shows them, takes them over and uploads them.
extension MediaScene.ClusterTests {
    static let uploadsMotoPort = 18598

    @Test("the store refused and the recording's owner SIGKILLed with its files pending: the other instance shows them, takes them over once the store is back, the bucket holds the tone; the killed one restarted drops its copies")
    func uploadsOutliveTheirInstance() async throws {
        if let missing = S3Venv.missing { Issue.record(Comment(rawValue: missing)); return }
        let room = try await Scene.createRoom()
        let dir = try Scene.tempDirectory("cluster-uploads")
        let moto = try await LocalServer.moto(port: Self.uploadsMotoPort)
        let store = try await Self.store(moto, dir: dir)
        let secret = dir.appendingPathComponent("whsec"), received = dir.appendingPathComponent("received.jsonl")
        _ = FileManager.default.createFile(atPath: secret.path, contents: Data(("whsec_" + Data(repeating: 7, count: 32).base64EncodedString()).utf8),
                                           attributes: [.posixPermissions: 0o600])
        let receiver = try await LocalServer.python("webhook_receiver.py", ["18636", secret.path, received.path], port: 18636)
        let flags = store.flags + ["--webhook-url", "http://127.0.0.1:18636/hooks", "--webhook-secret-file", secret.path]
        let pg: LocalPostgres
        do { pg = try await LocalPostgres.start(port: 15437) } catch {
            await receiver.stop()
            throw error
        }
        var pair = Pair(pg: pg, dir: dir, a: try await Self.serve("a", port: 18532, dir: dir, database: pg.url(), extra: flags))
        let player = try await player(room: room, dir: dir)
        var refused = false
        defer { player.signal(SIGKILL) }
        do {
            let b = try await Self.serve("b", port: 18533, dir: dir, database: pg.url(), token: pair.a.token, extra: flags)
            pair.b = b
            let out = dir.appendingPathComponent("rec")
            let rec = try await pair.a.request("POST", "/v1/recordings", json: ["room": room, "key": ["hex": key], "out": out.path])
            let id = try #require(try rec.json()["id"] as? String)
            let running = try await pair.a.waitFor("/v1/recordings/\(id)") { Self.live($0, frames: 150) }
            let first = try #require(running["owner"] as? String)
            let (owner, other) = first == "a" ? (pair.a, b) : (b, pair.a)
            let otherName = first == "a" ? "b" : "a"

            try await Faults.refuseTCP(port: Self.uploadsMotoPort)
            refused = true
            let final = try await owner.request("DELETE", "/v1/recordings/\(id)").json()
            #expect(final["state"] as? String == "done", "\(final)")
            // The non-owner sees the owner's uploads, failing.
            let failing = try await other.waitFor("/v1/recordings/\(id)", within: .seconds(30)) { s in
                let u = s["uploads"] as? [String: Any]
                return (u?["pending"] as? Int ?? 0) > 0 && (u?["failedTries"] as? Int ?? 0) > 0
            }
            let shown = try #require(failing["uploads"] as? [String: Any])
            let pending = try #require(shown["pending"] as? Int)
            #expect(shown["uploaded"] as? Int == 0 && (shown["lastError"] as? String)?.isEmpty == false, "\(shown)")
            let queuedBy = try await pg.psql("SELECT string_agg(DISTINCT uploader, ',') FROM job_uploads WHERE job_id = '\(id)'")
            #expect(queuedBy == first, "the owner queued them as its own")

            let killed = Date()
            owner.process.signal(SIGKILL)
            _ = await owner.process.exit(within: .seconds(10))
            try await Faults.allowTCP(port: Self.uploadsMotoPort)
            refused = false
            let done = try await other.waitFor("/v1/recordings/\(id)", within: .seconds(60)) { s in
                ((s["uploads"] as? [String: Any])?["pending"] as? Int) == 0
            }
            let settled = try #require(done["uploads"] as? [String: Any])
            print("cluster uploads: \(pending) file(s) pending when their uploader was SIGKILLed; all uploaded by the other "
                  + String(format: "%.1f s later", Date().timeIntervalSince(killed)))
            #expect(settled["uploaded"] as? Int == pending && settled["missing"] as? Int == 0, "\(settled)")
            let byOther = try await pg.psql("SELECT count(*) FROM job_uploads WHERE job_id = '\(id)' AND uploader = '\(otherName)' AND state = 'uploaded'")
            #expect(Int(byOther) == pending, "every file uploaded by the instance that took them: \(byOther)")
            #expect(try await other.metric("sfubot_upload_takeovers_total") == Double(pending))

            // The bucket holds what the merged manifest names, and the tone.
            let bucket = dir.appendingPathComponent("bucket")
            try FileManager.default.createDirectory(at: bucket, withIntermediateDirectories: true)
            let merged = try #require(try JSONSerialization.jsonObject(with: Data(try await store.client.get(key: "rec/\(id)/recording.json"))) as? [String: Any])
            let files = try #require(merged["files"] as? [[String: Any]])
            #expect(files.count + 1 == pending, "every file and the merged manifest itself")
            var hashes: [String: String] = [:]
            for file in files {
                let name = try #require(file["name"] as? String)
                let bytes = try await store.client.get(key: "rec/\(id)/\(name)")
                let sha = SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
                #expect(sha == file["sha256"] as? String, "\(name)")
                hashes[name] = sha
                try Data(bytes).write(to: bucket.appendingPathComponent(name))
            }
            let coverage = try await Gaps.measure(bucket, userID: "9", frequency: Self.tone)
            #expect(coverage.coveredSeconds > 3, "the tone recorded before the DELETE: \(coverage.coveredSeconds) s")
            // job.finished, from the instance that settled the last file, names every object.
            func finished() -> [[String: Any]] {
                ((try? String(contentsOf: received, encoding: .utf8)) ?? "").split(separator: "\n")
                    .compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
                    .filter { $0["id"] as? String == "\(id).finished" }
            }
            #expect(await eventually(within: 30) { !finished().isEmpty }, "job.finished delivered (signature verified by the receiver)")
            let named = ((finished().first?["data"] as? [String: Any])?["files"] as? [[String: Any]]) ?? []
            #expect(named.count == pending && named.allSatisfy { ($0["url"] as? String)?.contains("/rec/\(id)/") == true }, "\(named)")

            // The killed instance comes back on its state directory: its queue still holds the
            // files, which are no longer its own; it drops them and changes nothing.
            let back = try await Self.serve(first, port: first == "a" ? 18534 : 18535, dir: dir, database: pg.url(), token: pair.a.token, extra: flags)
            if first == "a" { pair.a = back } else { pair.b = back }
            let deadline = ContinuousClock.now + .seconds(30)
            while try await back.metric("sfubot_upload_queue_depth") > 0, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(250)) }
            #expect(try await back.metric("sfubot_upload_queue_depth") == 0, "its old entries dropped")
            #expect(try await back.metric("sfubot_uploads_total") == 0, "nothing uploaded twice")
            let after = try await pg.psql("SELECT count(*) FROM job_uploads WHERE job_id = '\(id)' AND uploader = '\(otherName)' AND state = 'uploaded'")
            #expect(after == byOther)
            for (name, sha) in hashes {
                let bytes = try await store.client.get(key: "rec/\(id)/\(name)")
                #expect(SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined() == sha, "\(name) unchanged")
            }
        } catch {
            if refused { try? await Faults.allowTCP(port: Self.uploadsMotoPort) }
            await pair.stop()
            await receiver.stop()
            await moto.stop()
            throw error
        }
        await pair.stop()
        await receiver.stop()
        await moto.stop()
    }
}
