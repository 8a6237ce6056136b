import Foundation
import ObjectStore
@testable import Service
import Testing
import TestSupport

/// An owner's own disk gone for good (`POST …/uploads/abandon`, ClusterStore+Abandon): the
/// recording waits for it until an operator gives its folder up; then the merged manifest and
/// `job.finished` go out with what the other owner wrote, naming what was lost and why. Two
/// instances' stores, publishing and workers on the real PostgreSQL and moto, b's manager
/// answering the API; a's death is its lease and session back-dated; no Janus, no media.
@Suite(.serialized) struct ClusterAbandonTests {
    /// A folder of an owner's own disk with two files.
    static func disk(_ dir: URL, _ name: String) throws -> URL {
        let folder = dir.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        _ = try UploadTaskTests.file(folder, "audio.mka", bytes: 2000)
        _ = try UploadTaskTests.file(folder, "manifest.json", bytes: 10)
        return folder
    }

    @Test("a taken over on b's own disk, then dead (its folder never queued, or queued with its files pending): refused while the job runs, for a running instance, without a reason, before the grace; given up, the merged manifest and job.finished name the abandoned folder, b's files only; a back leaves its files and uploads nothing",
          arguments: [false, true])
    func abandonedFolder(pendingFirst: Bool) async throws {
        if let missing = S3Venv.missing { Issue.record(Comment(rawValue: missing)); return }
        try await ClusterStoreTests.withServer { pg in
            var t = try await ClusterStoreTests.two(pg, pendingFirst ? "abandonpending" : "abandon")
            defer { t.close() }
            let dir = try Scene.tempDirectory("cluster-abandon")
            defer { try? FileManager.default.removeItem(at: dir) }
            let moto = try await LocalServer.moto(port: pendingFirst ? 18694 : 18693)
            let storage = try UploadTaskTests.storage(moto.port)
            try await storage.createBucket()
            var a = t.a, b = t.b
            (a.webhooks, b.webhooks) = (true, true)
            t = ClusterStoreTests.Two(a: a, b: b, pg: t.pg, database: t.database, running: t.running)
            let (pubA, workA) = try UploadTaskTests.worker(t, a, storage: storage, dir: dir)
            let (pubB, workB) = try UploadTaskTests.worker(t, b, storage: storage, dir: dir)
            let manager = try ClusterManagerTests.manager(dir, b, publishing: pubB)
            let id = "rec-1", reason = "node a's disk lost (ticket 4711)"
            func abandon(_ body: [String: String]) async throws -> RequestProblem? {
                let data = try JSONSerialization.data(withJSONObject: body)
                return await ClusterManagerTests.answer { () throws(RequestProblem) in _ = try await manager.abandonUploads(id, data) }
            }

            // a records on its disk, dies (lease back-dated); b takes the recording on its own disk.
            let diskA = try Self.disk(dir, "disk-a"), diskB = try Self.disk(dir, "disk-b")
            try await a.insert(id: id, spec: ClusterStoreTests.spec, created: Date())
            _ = try #require(try await a.claim(session: 1, grace: ClusterStoreTests.grace))
            try await a.setFolder(job: id, folderID: "f-a")
            try await pubA.notePart(RecordingPart(job: id, folder: diskA.path, folderID: "f-a"))
            _ = try await t.sql("UPDATE jobs SET lease_until = now() - interval '10 ms'")
            #expect(try await b.claim(session: 2, grace: ClusterStoreTests.grace)?.previous == "a")
            try await b.setFolder(job: id, folderID: "f-b")
            try await pubB.notePart(RecordingPart(job: id, folder: diskB.path, folderID: "f-b"))
            let early = try await abandon(["instance": "a", "reason": "node a lost"])
            #expect(early?.status == 409 && early?.message.contains("still runs") == true, "\(String(describing: early))")

            // Ended by b: its folder uploaded; the recording waits for a's.
            _ = try await b.end(id, .init(state: .done, ended: Date(), error: nil), status: nil)
            await pubB.queueEndedFolders(b)
            for _ in 0..<3 { _ = try await workB.round(session: 2) }
            let waiting = try #require(try await manager.status(id).uploads)
            #expect(waiting.waitingFor == ["a"] && waiting.pending == 0 && waiting.uploaded == 2 && waiting.finished == false, "\(waiting)")
            if pendingFirst {
                // a back once with the store away (its worker never tries): its folder queued, its files pending.
                await pubA.queueEndedFolders(a)
                let queued = try #require(try await manager.status(id).uploads)
                #expect(queued.waitingFor == nil && queued.pending == 2, "\(queued)")
            }

            // Refused: a running instance queues its own folder; a reason is required.
            for owner in ["a", "b"] {
                let running = try await abandon(["instance": owner, "reason": "mistake"])
                #expect(running?.status == 409 && running?.message.contains("instance \(owner) is running") == true, "\(String(describing: running))")
            }
            let noReason = try await abandon(["instance": "a"])
            #expect(noReason?.status == 400 && noReason?.message.contains("reason") == true, "\(String(describing: noReason))")
            #expect((try? await storage.get(key: "rec/\(id)/recording.json")) == nil, "still waiting: no merged manifest")

            // a dies (again): its session seen gone. Pending files are given up only once it has been gone for the grace.
            _ = try await t.sql("UPDATE instance_sessions SET gone_since = now() WHERE key = 1")
            if pendingFirst {
                let soon = try await abandon(["instance": "a", "reason": reason])
                #expect(soon?.status == 409 && soon?.message.contains("nothing of a's waits") == true, "\(String(describing: soon))")
                _ = try await t.sql("UPDATE instance_sessions SET gone_since = now() - interval '1 hour' WHERE key = 1")
            }
            #expect(try await abandon(["instance": "a", "reason": reason]) == nil, "given up (200)")
            for _ in 0..<3 { _ = try await workB.round(session: 2) }
            let done = try #require(try await manager.status(id).uploads)
            let why = "abandoned by b: \(reason)"
            #expect(done.finished == true && done.waitingFor == nil && (done.missing > 0) == pendingFirst, "\(done)")
            #expect(done.abandoned == [AbandonedFolder(owners: ["a"], prefix: "part-1/", reason: why)], "GET shows what was given up: \(done)")

            // The merged manifest: both owners, b's files only, a's folder named as abandoned.
            let merged = try #require(try JSONSerialization.jsonObject(with: Data(try await storage.get(key: "rec/\(id)/recording.json"))) as? [String: Any])
            #expect((merged["owners"] as? [[String: Any]])?.map { $0["instance"] as? String } == ["a", "b"], "\(merged)")
            let abandoned = merged["abandoned"] as? [[String: Any]]
            #expect(abandoned?.count == 1 && abandoned?.first?["owners"] as? [String] == ["a"] && abandoned?.first?["prefix"] as? String == "part-1/"
                    && abandoned?.first?["reason"] as? String == why, "\(merged)")
            let files = (merged["files"] as? [[String: Any]])?.compactMap { $0["name"] as? String }
            #expect(files == ["audio.mka", "manifest.json"], "b's folder alone: \(String(describing: files))")

            // job.finished, queued with the merged manifest's settle, says what is missing and why.
            let finished = try await t.sql("SELECT payload FROM tasks WHERE kind = 'webhook' AND key = '\(id).finished'")
            let data = (try JSONSerialization.jsonObject(with: Data(finished.utf8)) as? [String: Any])?["data"] as? [String: Any]
            #expect((data?["abandoned"] as? [[String: Any]])?.first?["reason"] as? String == why, "\(finished)")
            #expect((data?["files"] as? [[String: Any]])?.count == 3, "b's files and the merged manifest: \(finished)")

            // a comes back after all (a new session): its folder is not uploaded late, its files stay on its disk.
            let before = try FileManager.default.contentsOfDirectory(atPath: diskA.path).sorted()
            _ = try await t.sql("INSERT INTO instance_sessions (key, instance) VALUES (3, 'a')")
            await pubA.queueEndedFolders(a)
            #expect(try await workA.round(session: 3) == 0, "nothing of the abandoned folder uploaded")
            #expect(try await t.sql("SELECT count(*) FROM tasks WHERE kind = 'upload' AND state IN ('available', 'running')") == "0")
            #expect(try FileManager.default.contentsOfDirectory(atPath: diskA.path).sorted() == before && before.count == 2, "a's files stay: \(before)")
            await moto.stop()
        }
    }
}
