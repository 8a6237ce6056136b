import Bot
import Foundation
import Testing
import TestSupport

/// The disk holding a recording fills up (a small tmpfs, then a file taking the rest), and
/// space comes back. The recorder says so once, keeps what it wrote playable, writes the
/// manifest all the same, goes on in new files once there is space, and exits 74.
extension MediaScene {
@Suite struct RecordingDiskFullTests {
    let key = String(repeating: "4d", count: 32)

    @Test("disk full mid-call, then space again: said once, files playable, the loss in the manifest and the exit code, tracks resumed")
    func diskFullThenSpace() async throws {
        let room = try await Scene.createRoom()
        let dir = try Scene.tempDirectory("diskfull")
        let out = dir.appendingPathComponent("rec")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        let mounted = try await ChildProcess.run("/usr/bin/mount", ["-t", "tmpfs", "-o", "size=8m,mode=0700", "tmpfs", out.path])
        try #require(mounted.status == 0, "mount: \(mounted.errText)")
        defer { _ = try? ChildProcess("/usr/bin/umount", ["-l", out.path], capture: false) }

        let recorder = try MediaScene.CLITests.start(["record", "--janus", Scene.janusURL!, "--room", "\(room)", "--key-hex", key, "--out", out.path])
        defer { recorder.signal(SIGKILL) }
        try await Task.sleep(for: .seconds(1))
        let player = try MediaScene.CLITests.start(["play", "--test-pattern", "--janus", Scene.janusURL!, "--room", "\(room)", "--key-hex", key,
                                                    "--display", "8:Dee", "--duration", "60"])
        defer { player.signal(SIGKILL) }
        try await Task.sleep(for: .seconds(4))
        // Fill the disk to 32 KB of free space.
        let filler = out.appendingPathComponent("filler")
        var s = statvfs()
        #expect(statvfs(out.path, &s) == 0)
        let free = Int(s.f_bavail) * Int(s.f_frsize)
        let fd = open(filler.path, O_WRONLY | O_CREAT, 0o600)
        #expect(posix_fallocate(fd, 0, off_t(free - 32 * 1024)) == 0)
        close(fd)
        let fullAt = ContinuousClock.now
        var lost: RecordingManifest?
        while ContinuousClock.now - fullAt < .seconds(30) {
            try await Task.sleep(for: .seconds(1))
            if let m = try? RecordingManifest.read(from: out), !m.errors.isEmpty { lost = m; break }
        }
        let duringFull = try #require(lost, "the manifest says the disk filled, while it is full")
        print("disk full: the manifest said so \(ContinuousClock.now - fullAt) after the disk was filled: \(duringFull.errors.map(\.error))")
        try await Task.sleep(for: .seconds(2))
        unlink(filler.path)
        try await Task.sleep(for: .seconds(6))
        recorder.signal(SIGINT)
        let finished = await recorder.finished()
        #expect(finished.status == 74, "exit \(finished.status): \(finished.errText.suffix(2000))")
        let saidFull = finished.errText.components(separatedBy: "is full").count - 1
        #expect(saidFull == 1, "said once: \(finished.errText.suffix(3000))")

        let manifest = try RecordingManifest.read(from: out)
        #expect(manifest.ended != nil && !manifest.errors.isEmpty)
        #expect(manifest.gaps.contains { $0.cause == "the disk was full" && $0.end != nil }, "\(manifest.gaps)")
        let videos = manifest.feeds.filter { $0.userID == "8" && $0.kind == "video" }
        #expect(videos.count == 2, "before the disk filled, and after space came back: \(videos.map(\.file))")
        for video in videos {
            let pictures = try await Audio.videoLuma(out.appendingPathComponent(video.file)).count
            print("disk full: \(video.file): \(pictures) pictures decoded, on disk \(String(describing: video.onDisk))")
            #expect(pictures > 0 && pictures == video.onDisk?.frames, "\(video.file)")
        }
        #expect((videos.last?.onDisk?.frames ?? 0) >= 30, "the track went on once there was space")
    }
}
}
