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

    /// Takes the reserve before a recording starts, or refuses it: without room for 1 MiB the
    /// manifest could not be written once the tracks fill the disk, and the one left would
    /// claim a clean recording (issue 39: a tmpfs with 200 KiB free wrote 20 s, exited 73 and
    /// left an early manifest with `errors: []`). Kept: the recording's writes find it held.
    static func reserve(in folder: RecordingFolder) throws(BotError) {
        let file = folder.access.appendingPathComponent(".manifest.reserve")
        let fd = open(file.path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, PrivateFiles.fileMode)
        guard fd >= 0 else { throw .output("cannot create \(folder.shown.path)/.manifest.reserve: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let result = posix_fallocate(fd, 0, off_t(reserveBytes))
        guard result != 0 else { return }
        unlink(file.path)
        var fs = statvfs()
        let free = statvfs(folder.access.path, &fs) == 0 ? "\(Int(fs.f_bavail) * Int(fs.f_frsize) >> 10) KiB free" : String(cString: strerror(result))
        throw .output("the disk holding \(folder.shown.path) has no room for the \(reserveBytes >> 20) MiB kept for manifest.json (\(free)): free some space or record elsewhere (--out)")
    }

    /// The last manifest could not be written: the one on disk is an earlier one that does not
    /// say how the recording ended, and must not pass for a clean recording. It is replaced by a
    /// small one that says the recording is incomplete (written into the space the old one
    /// frees); if even that fails, none is left. Returns what is on disk now, if anything.
    @discardableResult
    func replaceWithIncomplete(_ final: RecordingManifest, error: any Error, log: Logger) -> RecordingManifest? {
        var small = RecordingManifest(room: final.room, janus: final.janus, e2ee: final.e2ee, started: final.started, ended: final.ended, feeds: [])
        small.errors = [.init(time: Date(), file: "manifest.json", error: "the final manifest.json could not be written (\(folder.showing("\(error)"))): "
                              + "the recording is incomplete; its \(final.feeds.count) track file(s) in the folder hold what was recorded, without this manifest's account of them")]
        unlink(directory.appendingPathComponent(".manifest.json.tmp").path)
        unlink(directory.appendingPathComponent("manifest.json").path)
        release()
        do {
            try small.write(to: directory)
            log.error("manifest.json replaced by one that says the recording is incomplete")
            return small
        } catch {
            log.error("manifest.json removed, and no manifest could be written (\(folder.showing("\(error)"))): the recording is incomplete")
            return nil
        }
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
