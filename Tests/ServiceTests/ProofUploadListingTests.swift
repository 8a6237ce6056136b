#if canImport(Glibc)
import Glibc
#endif
@testable import Bot
import Foundation
import Logging
import Proof
@testable import Service
import Spool
import Testing
import TestSupport

/// The proof and the uploads take one listing of a finished recording's folder (issue 41 item
/// 4, `RecordingFiles`): a signed proof sealed and the folder's upload tasks queued, both
/// through the held folder, no Janus. The store is a port nobody listens on: only the local
/// side of a try is reached.
@Suite(.serialized) struct ProofUploadListingTests {
    static let log = LocalUploadTests.log

    /// The proof's signed list of `folder`, as the recorder seals it (an empty manifest: the
    /// folder, not the manifest, says which files the recording has).
    static func sealed(_ folder: RecordingFolder) async -> [ManifestProof.File] {
        let identity = RecordingIdentity(id: "rec-listing", room: 1234, janus: "ws://127.0.0.1:8188", started: "2026-11-29T15:00:00.000Z", job: "rec-listing")
        let proof = RecordingProof(key: .generate(.p256), folder: folder, identity: identity, instance: nil, takeover: nil, head: nil,
                                   locate: { URL(fileURLWithPath: $0) })
        let manifest = RecordingManifest(room: 1234, janus: "ws://127.0.0.1:8188", e2ee: true, started: Date(), ended: Date(), feeds: [])
        return await proof.seal(manifest, log: log).proof?.files ?? []
    }

    /// The upload tasks queued for `job`: name → (file, size, SHA-256).
    static func queued(_ publishing: JobPublishing, _ job: String) -> [String: (file: String?, size: String?, sha256: String?)] {
        var out: [String: (file: String?, size: String?, sha256: String?)] = [:]
        for entry in publishing.tasks.spool.load().entries.map(\.entry) where entry.kind == .upload && entry.job == job {
            out[entry.args["name"] ?? entry.key] = (entry.args["file"], entry.args["size"], entry.args["sha256"])
        }
        return out
    }

    @Test("a finished folder swapped at its path after it was opened: the proof signs and the uploads queue the same files (the proof's own two besides) with the same hashes, the held folder's; hidden ones in neither; a try by the swapped path is refused, its file kept")
    func oneListing() async throws {
        let dir = try Scene.tempDirectory("proof-upload-listing")
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("rec-listing"), moved = dir.appendingPathComponent("rec-listing-moved")
        var originals: [String: String] = [:]
        // A track not in the manifest (a resume's earlier run): the old proof skipped it, the upload sent it.
        for name in ["1-ann.mkv", "2-ben.opus", "mix.mkv", "manifest.json"] {
            originals[name] = try LocalUploadTests.file(path, name, bytes: 2000).sha256
        }
        for hidden in [".sfubot-folder", ".manifest.reserve", ".1-ann.mkv.partial"] { _ = try LocalUploadTests.file(path, hidden, bytes: 10) }
        let folder = RecordingFolder(holding: try RecordingFiles.open(path.path), shown: path)
        #expect(rename(path.path, moved.path) == 0)
        for name in ["1-ann.mkv", "3-eve.mkv"] { _ = try LocalUploadTests.file(path, name, bytes: 100) }

        let signed = await Self.sealed(folder)
        let (publishing, worker) = try LocalUploadTests.publishing(dir.appendingPathComponent("state"), try LocalUploadTests.storage(18617))
        publishing.ended(job: "rec-listing", kind: "recording", room: 1234, failed: nil, folder: folder)
        #expect(await eventually(within: 10) { publishing.uploads(of: "rec-listing") != nil }, "its files queued")
        let uploads = Self.queued(publishing, "rec-listing")

        #expect(signed.map(\.name) == ["1-ann.mkv", "2-ben.opus", "mix.mkv"], "the proof: the held folder's files, not the swapped path's")
        #expect(Set(uploads.keys) == Set(signed.map(\.name)).union(["manifest.json", ProofChain.fileName]),
                "the uploads: exactly the proof's files and the proof's own (manifest and checkpoints)")
        for file in signed {
            #expect(file.sha256 == originals[file.name], "\(file.name): the proof hashed the original")
            #expect(uploads[file.name]?.sha256 == file.sha256 && uploads[file.name]?.size == "\(file.bytes)", "\(file.name): queued with the signed hash")
            #expect(uploads[file.name]?.file == path.appendingPathComponent(file.name).path, "tried by its shown path (all a restart has)")
        }

        // A try reads the shown path (all a restart has), which now holds a decoy: refused before anything is sent, kept.
        let tryOf = { publishing.tasks.spool.load().entries.map(\.entry).first { $0.job == "rec-listing" && $0.args["name"] == "1-ann.mkv" } }
        try await LocalUploadTests.work(worker) { tryOf()?.lastError != nil }
        let tried = tryOf()
        #expect(tried?.ended == nil && tried?.lastError?.contains("is not the file listed") == true, "\(String(describing: tried))")
        #expect(publishing.uploads(of: "rec-listing")?.uploaded == 0)
        #expect(FileManager.default.fileExists(atPath: path.appendingPathComponent("1-ann.mkv").path))
    }
}
