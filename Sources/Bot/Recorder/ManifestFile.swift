import Foundation
import Logging
import Synchronization

/// manifest.json and the room kept for it. When the tracks fill the disk, the manifest must
/// still say so: a hidden reserve file holds space that is given up for the manifest's next
/// write, and taken again once there is space. A failure is logged once until a write succeeds.
final class ManifestFile: Sendable {
    /// Written through `folder.access`; its errors are said with `folder.shown`.
    let folder: RecordingFolder
    private let reserve: URL
    /// Far more than a manifest of hundreds of tracks needs (twice: the temporary and the file).
    static let reserveBytes: Int = 1 << 20
    private let complained = Atomic<Bool>(false)
    private let reserved = Atomic<Bool>(false)

    init(folder: RecordingFolder) {
        self.folder = folder
        reserve = folder.access.appendingPathComponent(".manifest.reserve")
    }

    private var directory: URL { folder.access }

    /// Writes `manifest` atomically; on a full disk, gives up the reserve and tries again.
    func write(_ manifest: RecordingManifest, log: Logger) throws {
        do {
            try manifest.write(to: directory)
        } catch {
            guard release() else { throw error }
            try manifest.write(to: directory)
        }
        if complained.exchange(false, ordering: .relaxed) { log.notice("manifest.json written again") }
        if manifest.ended == nil { keep() } else { release() }
    }

    /// Logs a failed write, once until one succeeds.
    func failed(_ error: any Error, log: Logger) {
        guard !complained.exchange(true, ordering: .relaxed) else { return }
        log.error("cannot write manifest.json (\(folder.showing("\(error)"))): the one on disk is older than the recording; trying again every second")
    }

    /// Takes the reserve if it is not held (fails quietly while the disk is full).
    private func keep() {
        guard !reserved.load(ordering: .relaxed) else { return }
        let fd = open(reserve.path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, PrivateFiles.fileMode)
        guard fd >= 0 else { return }
        defer { close(fd) }
        if posix_fallocate(fd, 0, off_t(Self.reserveBytes)) == 0 {
            reserved.store(true, ordering: .relaxed)
        } else {
            _ = ftruncate(fd, 0)
        }
    }

    /// Gives the reserve's space back; false if none was held.
    @discardableResult
    private func release() -> Bool {
        let held = reserved.exchange(false, ordering: .relaxed)
        unlink(reserve.path)
        return held
    }
}
