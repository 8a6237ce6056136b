import Foundation
import ObjectStore
import Testing
import TestSupport

/// An owner's own disk gone for good: the recording waits for it until an operator gives its
/// folder up; then the merged manifest and `job.finished` go out with what the other owner
/// wrote, naming what was lost and why.
extension MediaScene.ClusterTests {
    @Test("the owner SIGKILLed on its own disk and never back (or back once, its folder queued, killed again with its files pending): refused while the job runs, for a running instance and without a reason; given up, the bucket's merged manifest and job.finished name the abandoned folder, the other's part of the tone is there; the owner back later leaves its files in place",
          arguments: [false, true])
    func abandonedFolder(pendingFirst: Bool) async throws {
        if let missing = S3Venv.missing { Issue.record(Comment(rawValue: missing)); return }
        let room = try await Scene.createRoom()
        let dir = try Scene.tempDirectory("cluster-abandon")
        let moto = try await LocalServer.moto(port: 18601)
        let store = try await Self.store(moto, dir: dir)
        let receiver = try await WebhookReceiver.start(port: 18637, in: dir)
        let flags = store.flags + receiver.flags
        let pg: LocalPostgres
        do { pg = try await LocalPostgres.start(port: 15441) } catch {
            await receiver.stop()
            throw error
        }
        var pair = Pair(pg: pg, dir: dir, a: try await Self.serve("a", port: 18544, dir: dir, database: pg.url(), extra: flags))
        let player = try await player(room: room, dir: dir)
        var refused = false
        defer { player.signal(SIGKILL) }
        do {
            let out = dir.appendingPathComponent("rec"), diskB = dir.appendingPathComponent("rec-b")
            for d in [out, diskB] { try FileManager.default.createDirectory(at: d, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700]) }
            let rec = try await pair.a.request("POST", "/v1/recordings", json: ["room": room, "key": ["hex": key], "out": out.path])
            let id = try #require(try rec.json()["id"] as? String)
            _ = try await pair.a.waitFor("/v1/recordings/\(id)") { $0["owner"] as? String == "a" && Self.live($0, frames: 150) }
            let b = try await ServeProcess.start(port: 18545, in: dir, stateDir: dir.appendingPathComponent("state-b"), token: pair.a.token,
                                                 extra: ["--database", pg.url(), "--instance-id", "b", "--signing-key",
                                                         dir.appendingPathComponent("state-a/signing.key").path] + flags,
                                                 launcher: Self.ownDisk(diskB, at: out))
            pair.b = b
            pair.a.process.signal(SIGKILL)
            _ = await pair.a.process.exit(within: .seconds(10))
            _ = try await b.waitFor("/v1/recordings/\(id)", within: .seconds(40)) { $0["owner"] as? String == "b" && Self.live($0, frames: 100) }
            let path = "/v1/recordings/\(id)/uploads/abandon"
            let early = try await b.request("POST", path, json: ["instance": "a", "reason": "node a lost"])
            #expect(early.status == 409 && early.text.contains("still runs"), "\(early.status) \(early.text)")
            try await Task.sleep(for: .seconds(2))
            let final = try await b.request("DELETE", "/v1/recordings/\(id)").json()
            #expect(final["state"] as? String == "done", "\(final)")
            _ = try await b.waitFor("/v1/recordings/\(id)", within: .seconds(60)) { s in
                let u = s["uploads"] as? [String: Any]
                return u?["waitingFor"] as? [String] == ["a"] && u?["pending"] as? Int == 0 && (u?["uploaded"] as? Int ?? 0) > 0
            }
            if pendingFirst {
                // A back with the store refused: it queues its folder, cannot send it, and dies again.
                try await Faults.refuseTCP(port: 18601)
                refused = true
                pair.a = try await Self.serve("a", port: 18547, dir: dir, database: pg.url(), token: pair.a.token, extra: flags)
                _ = try await b.waitFor("/v1/recordings/\(id)", within: .seconds(30)) { s in
                    let u = s["uploads"] as? [String: Any]
                    return u?["waitingFor"] == nil && (u?["pending"] as? Int ?? 0) > 0
                }
                pair.a.process.signal(SIGKILL)
                _ = await pair.a.process.exit(within: .seconds(10))
                try await Faults.allowTCP(port: 18601)
                refused = false
            }

            // Refused: a running instance queues its own folder; a reason is required.
            let running = try await b.request("POST", path, json: ["instance": "b", "reason": "mistake"])
            #expect(running.status == 409 && running.text.contains("instance b is running"), "\(running.status) \(running.text)")
            let noReason = try await b.request("POST", path, json: ["instance": "a"])
            #expect(noReason.status == 400 && noReason.text.contains("reason"), "\(noReason.status) \(noReason.text)")
            #expect((try? await store.client.get(key: "rec/\(id)/recording.json")) == nil, "still waiting: no merged manifest")

            let reason = "node a's disk lost (ticket 4711)"
            // Pending files are given up only once their uploader's session has been gone for the
            // takeover grace (before that: 409, nothing of a waits yet).
            var given = try await b.request("POST", path, json: ["instance": "a", "reason": reason])
            let deadline = ContinuousClock.now + .seconds(30)
            while pendingFirst, given.status == 409, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(500))
                given = try await b.request("POST", path, json: ["instance": "a", "reason": reason])
            }
            #expect(given.status == 200, "\(given.status) \(given.text)")
            let done = try await b.waitFor("/v1/recordings/\(id)", within: .seconds(30)) { s in
                ((s["uploads"] as? [String: Any])?["finished"] as? Bool) == true
            }
            let uploads = try #require(done["uploads"] as? [String: Any])
            #expect(uploads["waitingFor"] == nil && ((uploads["missing"] as? Int ?? 0) > 0) == pendingFirst, "\(uploads)")
            let shown = uploads["abandoned"] as? [[String: Any]]
            #expect(shown?.count == 1 && shown?.first?["owners"] as? [String] == ["a"] && shown?.first?["reason"] as? String == "abandoned by b: \(reason)",
                    "GET shows what was given up: \(uploads)")

            // The merged manifest: both owners, B's files only, A's folder named as abandoned.
            let merged = try #require(try JSONSerialization.jsonObject(with: Data(try await store.client.get(key: "rec/\(id)/recording.json"))) as? [String: Any])
            #expect((merged["owners"] as? [[String: Any]])?.map { $0["instance"] as? String } == ["a", "b"], "\(merged["owners"] ?? "")")
            let abandoned = try #require(merged["abandoned"] as? [[String: Any]], "\(merged)")
            #expect(abandoned.count == 1 && abandoned.first?["owners"] as? [String] == ["a"] && abandoned.first?["prefix"] as? String == "part-1/", "\(abandoned)")
            #expect((abandoned.first?["reason"] as? String) == "abandoned by b: \(reason)", "\(abandoned)")
            let files = try #require(merged["files"] as? [[String: Any]])
            #expect(!files.isEmpty && files.allSatisfy { !(($0["name"] as? String) ?? "").hasPrefix("part-") }, "\(files)")
            let bucket = dir.appendingPathComponent("bucket")
            try FileManager.default.createDirectory(at: bucket, withIntermediateDirectories: true)
            for file in files {
                let name = try #require(file["name"] as? String)
                try Data(try await store.client.get(key: "rec/\(id)/\(name)")).write(to: bucket.appendingPathComponent(name))
            }
            let onB = try await Gaps.measure(bucket, userID: "9", frequency: Self.tone)
            #expect(onB.coveredSeconds > 2, "B's part of the tone is in the bucket: \(onB.coveredSeconds) s")

            // job.finished, signature verified by the receiver, says what is missing and why.
            func finished() -> [[String: Any]] { receiver.events(id: "\(id).finished") }
            #expect(await eventually(within: 30) { !finished().isEmpty }, "job.finished delivered")
            let data = finished().first?["data"] as? [String: Any] ?? [:]
            #expect((data["abandoned"] as? [[String: Any]])?.first?["reason"] as? String == "abandoned by b: \(reason)", "\(data)")
            #expect((data["files"] as? [[String: Any]])?.count == files.count + 1, "B's files and the merged manifest: \(data)")

            // A comes back after all: its folder is not uploaded late, and its files stay on its disk.
            let localBefore = try FileManager.default.contentsOfDirectory(atPath: out.path).filter { !$0.hasPrefix(".") }.sorted()
            pair.a = try await Self.serve("a", port: 18546, dir: dir, database: pg.url(), token: pair.a.token, extra: flags)
            try await Task.sleep(for: .seconds(4))
            #expect(try await pair.a.metric("sfubot_upload_queue_depth") == 0, "its old entries dropped")
            #expect(try await pair.a.metric("sfubot_uploads_total") == 0, "nothing of the abandoned folder uploaded")
            let localAfter = try FileManager.default.contentsOfDirectory(atPath: out.path).filter { !$0.hasPrefix(".") }.sorted()
            #expect(!localBefore.isEmpty && localAfter == localBefore, "A's files stay where they are: \(localBefore) → \(localAfter)")
        } catch {
            if refused { try? await Faults.allowTCP(port: 18601) }
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
