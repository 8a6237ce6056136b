import Foundation
import GStreamerKit
import Logging

/// A full disk: every track's file sink fails at once. It is said once, the time is a gap in the
/// manifest, each track's loss is in `errors`, and once there is space again the tracks it
/// stopped go on in new files. The manifest keeps room of its own (`ManifestFile`).
extension RoomRecording {
    func noteDiskFull() {
        guard diskFullSince == nil else { return }
        diskFullSince = Date()
        gaps.append(.init(start: Date(), cause: DiskSpace.gapCause))
        log.error("the disk holding \(folder.shown.path) is full: every track stops being written (each file keeps what was written, and plays); they go on in new files once \(DiskSpace.resumeBytes >> 20) MiB are free again")
    }

    /// Every second: with space again, the tracks the full disk stopped go on in new files.
    func resumeAfterDiskFull() {
        guard let since = diskFullSince, state == .recording, let media, DiskSpace.free(in: folder.access) >= DiskSpace.resumeBytes else { return }
        diskFullSince = nil
        failedBranches.subtract(fullBranches)
        let resumed = branches.retry(branches: fullBranches, pipeline: media.pipeline, mix: media.mix)
        fullBranches = []
        if let i = gaps.lastIndex(where: { $0.end == nil && $0.cause == DiskSpace.gapCause }) { gaps[i].close(cause: nil) }
        log.notice("there is space again in \(folder.shown.path) after \(Int(Date().timeIntervalSince(since))) s: \(resumed) track(s) go on in new files")
    }
}

/// Free space and what a full disk looks like from GStreamer.
enum DiskSpace {
    static let gapCause = "the disk was full"
    /// Free space at which the tracks resume: room for a minute of a few A/V tracks.
    static let resumeBytes: UInt64 = 4 << 20

    /// Bytes an unprivileged writer may still use on the file system holding `directory`.
    static func free(in directory: URL) -> UInt64 {
        var s = statvfs()
        guard statvfs(directory.path, &s) == 0 else { return 0 }
        return UInt64(s.f_bavail) * UInt64(s.f_frsize)
    }

    /// Whether a sink's error is ENOSPC: GStreamer's GST_RESOURCE_ERROR_NO_SPACE_LEFT ("No space
    /// left on the resource."), or the system's text in the debug part.
    static func isFull(text: String, debug: String?) -> Bool {
        let texts = [text, debug ?? ""]
        return texts.contains { $0.contains("No space left on the resource") || $0.contains(String(cString: strerror(ENOSPC))) }
    }
}
