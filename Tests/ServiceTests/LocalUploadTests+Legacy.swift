import Foundation
import ObjectStore
@testable import Service
import Testing
import TestSupport

extension LocalUploadTests {
    @Test("an older version's upload queue (uploads/ and upload-batches/, its own format) becomes tasks at start: the pending file reaches the bucket, the one uploaded before is named, job.finished sent, the old folders gone")
    func legacySpoolAdopted() async throws {
        if let missing = S3Venv.missing { Issue.record(Comment(rawValue: missing)); return }
        let dir = try Scene.tempDirectory("local-upload-legacy")
        defer { try? FileManager.default.removeItem(at: dir) }
        let moto = try await LocalServer.moto(port: 18616)
        let client = try Self.storage(moto.port)
        try await client.createBucket()
        let state = dir.appendingPathComponent("state"), folder = dir.appendingPathComponent("old-1")
        let audio = try Self.file(folder, "audio.mka", bytes: 4000)
        // As the former UploadQueue and its batches wrote them (JSONEncoder's defaults: dates as
        // seconds since 2001): audio.mka failed twice and waits; manifest.json was uploaded.
        let past = Date().timeIntervalSinceReferenceDate - 60
        let entry = """
            {"file": "\(audio.path)", "key": "rec/old-1/audio.mka", "deleteAfterUpload": true, "context": {"job": "old-1"},
             "attempts": 2, "notBefore": \(past), "created": \(past - 600), "lastError": "cannot reach the object store: refused"}
            """
        let manifest = #"{"key": "rec/old-1/manifest.json", "url": "http://127.0.0.1/sfubot-local/rec/old-1/manifest.json", "size": 12, "sha256": "ab", "etag": "cd", "parts": 1}"#
        let batch = """
            {"job": "old-1", "kind": "recording", "room": 4321, "failed": false,
             "files": [{"key": "rec/old-1/audio.mka", "name": "audio.mka"}, {"key": "rec/old-1/manifest.json", "name": "manifest.json"}],
             "objects": {"rec/old-1/manifest.json": \(manifest)}, "missing": []}
            """
        for (folder, name, text) in [("uploads", "6f1d2a3b4c5d6e7f-rec_old-1_audio.mka", entry), ("upload-batches", "old-1", batch)] {
            let url = state.appendingPathComponent(folder)
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
            try Data(text.utf8).write(to: url.appendingPathComponent("\(name).json"))
        }

        let (publishing, worker) = try Self.publishing(state, client)
        let adopted = try #require(publishing.uploads(of: "old-1"))
        #expect(adopted.pending == 1 && adopted.uploaded == 1 && adopted.failedTries == 2, "its tries kept: \(adopted)")
        #expect(!FileManager.default.fileExists(atPath: state.appendingPathComponent("uploads").path)
                && !FileManager.default.fileExists(atPath: state.appendingPathComponent("upload-batches").path), "the old folders are gone")
        try await Self.work(worker) { publishing.uploads(of: "old-1")?.pending == 0 }
        #expect(Self.sha256(try await client.get(key: "rec/old-1/audio.mka")) == audio.sha256)
        #expect(!FileManager.default.fileExists(atPath: audio.path), "deleted once verified")
        let data = try #require(Self.queued(publishing, "old-1.finished"))
        #expect(data["room"] as? Int == 4321)
        let files = try #require(data["files"] as? [[String: Any]])
        #expect(files.compactMap { $0["name"] as? String } == ["audio.mka", "manifest.json"], "\(files)")
        #expect(files.first?["sha256"] as? String == audio.sha256 && files.last?["size"] as? Int == 12)
        await moto.stop()
    }
}
