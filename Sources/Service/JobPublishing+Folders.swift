import Bot
import Foundation
import Locking
import Logging
import ObjectStore
import Proof
import Spool

/// A recording folder this instance wrote, noted in its state directory before the first
/// frame: once the job has ended (here or on another instance), the folder is queued for upload
/// by one instance holding it. On shared storage every owner holds the one folder and the
/// first to queue it uploads it; on a disk of its own, only its instance can, even after a
/// SIGKILL and restart on the same state directory.
struct RecordingPart: Codable, Sendable {
    var job: String
    /// The folder as shown (its canonical path; the same on every instance).
    var folder: String
    var folderID: String
}

extension JobPublishing {
    /// Notes a folder this instance is about to write (off the pool: a synced file).
    func notePart(_ part: RecordingPart) async throws {
        let parts = self.parts
        try await OffPool.run(on: files) { try parts.put(part.job, part) }
    }

    /// Each noted folder whose job has ended: queued (the last owner's folder at the job's
    /// prefix, an earlier owner's own disk under `part-N/`), or forgotten if another instance
    /// queued the same folder.
    func queueEndedFolders(_ store: ClusterStore) async {
        let parts = self.parts
        let noted = await OffPool.run(on: files) { parts.load().entries.map(\.entry) }
        for part in noted {
            do {
                switch try await store.folderState(job: part.job, folderID: part.folderID) {
                case .active: continue
                case .done: break
                case .abandoned(let why):
                    logger.warning("job \(part.job): its folder \(part.folder) was given up while this instance was away (\(why)): its files stay where they are, not uploaded")
                case .forgotten:
                    // Kept in the database while its uploads wait: only a job ended without storage, or removed by hand.
                    logger.warning("job \(part.job) is no longer in the database: its folder \(part.folder) stays where it is, not uploaded")
                case .ended(let prefix): try await queueFolder(part, prefix: prefix, store)
                }
                try await OffPool.run(on: files) { try parts.remove(part.job) }
            } catch {
                logger.warning("job \(part.job): its folder \(part.folder) cannot be queued for upload yet: \(error)")
            }
        }
    }

    private func queueFolder(_ part: RecordingPart, prefix: String, _ store: ClusterStore) async throws {
        guard let location else { return }
        // Only its path is noted (it outlives this process): opened once, listed and hashed through that.
        let folder = RecordingFolder(URL(fileURLWithPath: part.folder))
        let (found, manifest) = await OffPool.run(on: files) { [self] in
            (listed(folder, job: part.job),
             try? String(contentsOfFile: URL(fileURLWithPath: part.folder).appendingPathComponent("manifest.json").path, encoding: .utf8))
        }
        let rows = found.map { file in
            ClusterStore.UploadRow(job: part.job, key: location.key("\(part.job)/\(prefix)\(file.name)"), name: prefix + file.name,
                                   file: folder.shown.appendingPathComponent(file.name).path, folderID: part.folderID, size: file.size, sha256: file.sha256)
        }
        guard try await store.queueFolder(job: part.job, folderID: part.folderID, folder: part.folder, prefix: prefix, manifest: manifest,
                                          rows: rows) else {
            logger.info("job \(part.job): its folder \(part.folder) was queued by another instance (shared storage)")
            return
        }
        logger.info("job \(part.job): \(rows.count) file(s) of \(part.folder) queued for \(location)\(prefix.isEmpty ? "" : " under \(prefix)")")
    }
}
