@testable import Bot
import FrameCrypto
import Foundation
import Logging
import Testing
import TestSupport

/// Issue 39, item 2: a disk nearly full when the recording starts. Without room for the 1 MiB
/// kept for the manifest, `record` refuses at once (exit 73, the reason); and a last manifest
/// that cannot be written never leaves an earlier one that passes for a clean recording.
extension MediaScene {
@Suite struct DiskNearlyFullTests {
    let key = String(repeating: "4d", count: 32)

    /// A `size` tmpfs mounted on `dir` (inside the tests' private namespace), filled but for
    /// `free` bytes; unmounted by the returned closure.
    static func smallDisk(_ dir: URL, size: String, free: Int) async throws -> () -> Void {
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let mounted = try await ChildProcess.run("/usr/bin/mount", ["-t", "tmpfs", "-o", "size=\(size),mode=0700", "tmpfs", dir.path])
        try #require(mounted.status == 0, "mount: \(mounted.errText)")
        try fill(dir, leaving: free, name: "filler")
        return { _ = try? ChildProcess("/usr/bin/umount", ["-l", dir.path], capture: false) }
    }

    /// Takes all the free space of `dir`'s disk but `leaving` bytes, in a file `name`.
    static func fill(_ dir: URL, leaving: Int, name: String) throws {
        var s = statvfs()
        try #require(statvfs(dir.path, &s) == 0)
        let free = Int(s.f_bavail) * Int(s.f_frsize)
        guard free > leaving else { return }
        let fd = open(dir.appendingPathComponent(name).path, O_WRONLY | O_CREAT, 0o600)
        defer { close(fd) }
        #expect(posix_fallocate(fd, 0, off_t(free - leaving)) == 0)
    }

    static func freeBytes(_ dir: URL) -> Int {
        var s = statvfs()
        return statvfs(dir.path, &s) == 0 ? Int(s.f_bavail) * Int(s.f_frsize) : -1
    }

    @Test("a 3 MiB disk with 200 KiB free: record refuses at once, exit 73, saying why; nothing in the folder claims a recording")
    func recordRefusesWithoutRoomForTheManifest() async throws {
        let room = try await Scene.createRoom()
        let out = try Scene.tempDirectory("nearly-full").appendingPathComponent("rec")
        let unmount = try await Self.smallDisk(out, size: "3m", free: 200 << 10)
        defer { unmount() }
        print("nearly full: \(Self.freeBytes(out) >> 10) KiB free at the start")
        let started = ContinuousClock.now
        let recorder = try MediaScene.CLITests.start(["record", "--janus", Scene.janusURL!, "--room", "\(room)", "--key-hex", key,
                                                      "--out", out.path, "--duration", "20"])
        if await recorder.exit(within: .seconds(15)) == nil { recorder.signal(SIGKILL) }
        let run = await recorder.finished()
        let took = ContinuousClock.now - started
        #expect(run.status == 73, "exit \(run.status): \(run.errText)")
        #expect(took < .seconds(10), "refused at the start, not after the recording: \(took)")
        #expect(run.errText.contains("no room for the 1 MiB kept for manifest.json") && run.errText.contains(out.path), "\(run.errText)")
        let names = try FileManager.default.contentsOfDirectory(atPath: out.path)
        #expect(names == ["filler"], "nothing written, no manifest, no reserve left: \(names)")
    }

    @Test("the last manifest cannot be written (a full disk, no reserve held): the one left says the recording is incomplete")
    func unwritableLastManifestLeavesNoCleanOne() async throws {
        let out = try Scene.tempDirectory("manifest-full").appendingPathComponent("rec")
        // Room for an early manifest, none for the reserve: as when another writer took the
        // space the reserve gave up for a manifest before it could be taken again.
        let unmount = try await Self.smallDisk(out, size: "2m", free: 16 << 10)
        defer { unmount() }
        let file = ManifestFile(folder: RecordingFolder(out))
        let log = Logger(label: "test.manifest")
        let early = RecordingManifest(room: 1, janus: "ws://127.0.0.1:8188", e2ee: true, started: Date(), ended: nil, feeds: [])
        try file.write(early, log: log)
        #expect(!FileManager.default.fileExists(atPath: out.appendingPathComponent(".manifest.reserve").path) || Self.freeBytes(out) < 1 << 20)
        try Self.fill(out, leaving: 0, name: "filler2")
        // The last manifest, with its many tracks, does not fit.
        var final = early
        final.ended = Date()
        final.feeds = (0..<60).map { i in
            RecordingManifest.Feed(feedID: Int64(i), display: "\(i):Participant \(i)", userID: "\(i)", displayName: "Participant \(i)", mid: "\(i)",
                                   kind: "audio", codec: "opus", file: "\(i)-\(i).opus", joined: Date(), left: Date(), firstFrame: Date(), lastFrame: Date(),
                                   frames: .zero, firstMediaTime: 1, lastMediaTime: 9, written: 500)
        }
        #expect(throws: (any Error).self, "the disk is full and the reserve is gone") { try file.write(final, log: log) }
        let left = file.replaceWithIncomplete(final, error: CocoaError(.fileWriteOutOfSpace), log: log)
        let onDisk = try RecordingManifest.read(from: out)
        print("unwritable last manifest: on disk \(onDisk.errors.map(\.error))")
        #expect(left != nil && onDisk.ended != nil && onDisk.lostSomething, "\(onDisk.errors)")
        #expect(onDisk.errors.first?.error.contains("the recording is incomplete") == true)
        #expect(onDisk.feeds.isEmpty && onDisk.errors.first?.error.contains("60 track file(s)") == true)
    }
}
}
