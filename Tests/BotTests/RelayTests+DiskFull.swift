import Foundation
import Testing
import TestSupport

extension MediaScene.RelayTests {
    /// `--to hls:DIR` on a disk that fills up mid-call (an 8 MB tmpfs, then a file taking all
    /// but 32 kB), and space comes back 3 s later; ended with Ctrl-C, as a user ends it. The
    /// relay keeps the call, says the disk is full, writes segments again once there is space,
    /// and exits 74: what it could not write is a loss. The playlist left decodes to the tone.
    @Test func hlsOnADiskThatFillsUpSaysSoGoesOnAndEndsIncomplete() async throws {
        let dir = try Scene.tempDirectory("relay-hls-full")
        let source = try await RelayCase.source(in: dir)
        let room = try await Scene.createRoom()
        let disk = dir.appendingPathComponent("disk")
        try FileManager.default.createDirectory(at: disk, withIntermediateDirectories: true)
        let mounted = try await ChildProcess.run("/usr/bin/mount", ["-t", "tmpfs", "-o", "size=8m,mode=0700", "tmpfs", disk.path])
        try #require(mounted.status == 0, "mount: \(mounted.errText)")
        defer { _ = try? ChildProcess("/usr/bin/umount", ["-l", disk.path], capture: false) }
        let publisher = try RelayCase.publisher(source, room: room)
        defer { publisher.signal(SIGKILL) }
        let folder = disk.appendingPathComponent("hls")
        let relay = try RelayCase.relay(to: "hls:\(folder.path)", room: room, seconds: 60)
        defer { relay.signal(SIGKILL) }
        // What was written before the disk filled: kept as it is, whatever comes after. Filled once
        // a segment is complete (a loaded machine joined slower than 8 s: CI once had none).
        var before: [String: Data] = [:]
        let written = ContinuousClock.now + .seconds(40)
        while before.isEmpty, ContinuousClock.now < written {
            try await Task.sleep(for: .milliseconds(500))
            before = (try? Self.segments(in: folder)) ?? [:]
        }
        let filler = disk.appendingPathComponent("filler")
        var s = statvfs()
        #expect(statvfs(disk.path, &s) == 0)
        let fd = open(filler.path, O_WRONLY | O_CREAT, 0o600)
        #expect(posix_fallocate(fd, 0, off_t(Int(s.f_bavail) * Int(s.f_frsize) - 32 * 1024)) == 0)
        close(fd)
        try await Task.sleep(for: .seconds(3))
        unlink(filler.path)
        try await Task.sleep(for: .seconds(8))
        relay.signal(SIGINT)
        let ran = await relay.finished()
        let said = ran.errText.split(whereSeparator: \.isNewline).filter { $0.contains("No space left") }
        print("relay to a full disk: exit \(ran.status); said \(said.count) time(s): \(said.first ?? "")")
        #expect(ran.status == 74, "exit \(ran.status): \(ran.outText) \(ran.errText.suffix(2000))")
        #expect(!said.isEmpty, "said: \(ran.errText.suffix(2000))")
        // Frames kept being opened: the call was kept while the output could not write.
        let opened = ran.outText.firstMatch(of: /audio frames received: ([0-9]+), opened: ([0-9]+)/).flatMap { Int($0.2) } ?? 0
        #expect(opened >= 700, "audio frames opened in about 17 s: \(ran.outText)")
        // Segments written after the space came back, and the playlist decodes to the tone.
        let after = try Self.segments(in: folder)
        let names = after.keys.sorted()
        let recent = names.filter { before[$0] == nil }
        let all = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted().map { name in
            "\(name) \((try? FileManager.default.attributesOfItem(atPath: folder.appendingPathComponent(name).path)[.size] as? Int) ?? -1)"
        }
        print("relay to a full disk: \(before.count) segments before it filled, \(recent.count) new after: \(all)")
        #expect(!before.isEmpty && before.allSatisfy { after[$0.key] == $0.value }, "the segments written before, unchanged: \(before.keys.sorted()) → \(names)")
        #expect(recent.count >= 2, "segments written once there was space again: \(names)")
        let playlist = folder.appendingPathComponent("index.m3u8")
        let f = try #require(Audio.dominantFrequency(try await RelayCase.audioSamples(playlist)), "\(names.sorted())")
        #expect(abs(f - 440) <= 440 * 0.02, "dominant \(f) Hz")
    }

    /// The folder's segments and their bytes, but the newest of each try (it may be growing).
    static func segments(in folder: URL) throws -> [String: Data] {
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".ts") }.sorted()
        let complete = names.filter { name in
            let prefix = name.dropLast("00000.ts".count)
            return names.contains { $0.hasPrefix(prefix) && $0.count == name.count && $0 > name }
        }
        return try Dictionary(uniqueKeysWithValues: complete.map { ($0, try Data(contentsOf: folder.appendingPathComponent($0))) })
    }
}
