import Bot
import Foundation
import Testing
import TestSupport

/// A recorder killed with SIGKILL: what reached the disk plays, up to about the last second,
/// the A/V tracks included; and a service killed and restarted lists no empty file.
extension MediaScene {
@Suite struct RecordingCrashTests {
    let key = String(repeating: "7e", count: 32)

    @Test("SIGKILL at any moment: every file decodes and holds at least what the manifest counted a second before")
    func killedAVRecorderLeavesPlayableFiles() async throws {
        let room = try await Scene.createRoom()
        let dir = try Scene.tempDirectory("kill-av")
        let out = dir.appendingPathComponent("rec")
        let recorder = try MediaScene.CLITests.start(["record", "--janus", Scene.janusURL!, "--room", "\(room)", "--key-hex", key, "--out", out.path])
        try await Task.sleep(for: .seconds(1))
        let player = try MediaScene.CLITests.start(["play", "--test-pattern", "--janus", Scene.janusURL!, "--room", "\(room)", "--key-hex", key,
                                                    "--display", "4:Kim", "--duration", "30"])
        defer { player.signal(SIGKILL) }
        // Until the manifest on disk counts pictures (however slowly a loaded machine starts),
        // then off a second's boundary, so the manifest on disk is up to a second old.
        let end = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < end {
            let video = (try? RecordingManifest.read(from: out))?.feeds.first { $0.userID == "4" && $0.kind == "video" }
            if (video?.written ?? 0) >= 60 { break }
            try await Task.sleep(for: .milliseconds(200))
        }
        try await Task.sleep(for: .milliseconds(1_600))
        recorder.signal(SIGKILL)
        _ = await recorder.exit()

        let manifest = try RecordingManifest.read(from: out)
        let feeds = manifest.feeds.filter { $0.userID == "4" }
        #expect(Set(feeds.map(\.kind)) == ["audio", "video"], "\(feeds.map(\.file))")
        for feed in feeds {
            let file = out.appendingPathComponent(feed.file)
            let counted = try #require(feed.written)
            if feed.kind == "video" {
                let pictures = try await Audio.videoLuma(file).count
                print("killed recorder: \(feed.file): \(pictures) pictures decoded, \(counted) counted at the last manifest")
                #expect(pictures >= counted && counted >= 50, "\(pictures) pictures decoded, \(counted) counted a second before the kill")
            } else {
                let frames = Double(try await Audio.decode(file).count) / 960
                print("killed recorder: \(feed.file): \(frames) audio frames decoded, \(counted) counted at the last manifest")
                #expect(frames >= Double(counted) - 1, "\(frames) frames decoded, \(counted) counted a second before the kill")
            }
        }
    }

    @Test("serve SIGKILLed and restarted: the recording goes on; no empty file listed; every file listed decodes")
    func serveKilledAndRestarted() async throws {
        let room = try await Scene.createRoom()
        let dir = try Scene.tempDirectory("serve-kill-av")
        var serve = try await ServeProcess.start(port: 18501, in: dir)
        let player = try MediaScene.CLITests.start(["play", "--test-pattern", "--janus", Scene.janusURL!, "--room", "\(room)", "--key-hex", key,
                                                    "--display", "2:Bo", "--duration", "60"])
        defer { player.signal(SIGKILL) }
        let out = serve.stateDir.appendingPathComponent("recordings/crash")
        let rec = try await serve.request("POST", "/v1/recordings", json: ["room": room, "key": ["hex": key], "out": out.path])
        let id = try #require(try rec.json()["id"] as? String, "\(rec.text)")
        _ = try await serve.waitFor("/v1/recordings/\(id)") { s in
            ((s["feeds"] as? [[String: Any]]) ?? []).contains { $0["kind"] as? String == "video" && ($0["framesOpened"] as? Int ?? 0) > 50 }
        }
        serve.process.signal(SIGKILL)
        _ = await serve.process.exit(within: .seconds(10))
        serve = try await ServeProcess.start(port: 18502, in: dir, stateDir: serve.stateDir, token: serve.token)
        defer { serve.process.signal(SIGKILL) }
        _ = try await serve.waitFor("/v1/recordings/\(id)", within: .seconds(60)) { s in
            ((s["feeds"] as? [[String: Any]]) ?? []).contains { $0["live"] as? Bool == true && $0["kind"] as? String == "video" && ($0["framesOpened"] as? Int ?? 0) > 40 }
        }
        let final = try await serve.request("DELETE", "/v1/recordings/\(id)").json()
        #expect(final["state"] as? String == "done", "\(final)")

        let manifest = try RecordingManifest.read(from: out)
        // Verified as serve left the folder, before the decoding below writes its scratch files
        // (`*.gray`) beside the media: those are no part of the recording, and verify rejects them.
        let verified = try await MediaScene.CLITests.run(["verify", out.path])
        #expect(verified.status == 0 && verified.out.contains("covered by: the signed final manifest"), "\(verified.out)")
        #expect(manifest.errors.isEmpty, "\(manifest.errors.map(\.error))")
        #expect(manifest.gaps.contains { $0.cause.contains("not running") && $0.end != nil }, "\(manifest.gaps)")
        let feeds = manifest.feeds.filter { $0.userID == "2" }
        let videos = feeds.filter { $0.kind == "video" }
        #expect(videos.count == 2, "a segment before the kill and one after: \(feeds.map(\.file))")
        for feed in feeds {
            let disk = try #require(feed.onDisk, "\(feed.file)")
            #expect(disk.bytes > 0 && disk.frames > 0 && disk.decoded > 0, "\(feed.file): \(disk)")
        }
        // Before the kill: the track files as they were left; after: one merged file.
        #expect(videos.first?.file.hasSuffix(".video.mkv") == true && videos.last?.file.hasSuffix("-2.mkv") == true, "\(videos.map(\.file))")
        for video in videos {
            let pictures = try await Audio.videoLuma(out.appendingPathComponent(video.file)).count
            #expect(pictures == video.onDisk?.frames, "\(video.file): \(pictures) decoded, \(String(describing: video.onDisk))")
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: out.path)
        let listed = Set(manifest.feeds.map(\.file))
        for name in names where name.hasSuffix(".mkv") || name.hasSuffix(".mka") || name.hasSuffix(".opus") {
            let size = (try FileManager.default.attributesOfItem(atPath: out.appendingPathComponent(name).path)[.size] as? Int) ?? 0
            #expect(size > 0, "\(name) is empty")
            #expect(listed.contains(name), "\(name) is on disk and not in the manifest")
        }
        // Signed with the key serve made in its state folder; one chain across the restart, ending in the manifest.
        let chain = try #require(manifest.proof?.chain, "serve signs with <state-dir>/signing.key")
        let lines = try String(contentsOf: out.appendingPathComponent("proof.jsonl"), encoding: .utf8).split(separator: "\n")
        #expect(chain.checkpoints == lines.count && lines.count >= 2, "\(lines.count) lines, the manifest names \(chain.checkpoints)")
        // The first checkpoint is the killed process's (before the recorder came back).
        let first = try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any]
        let back = try #require(manifest.gaps.first { $0.cause.contains("not running") }?.end)
        #expect((first?["time"] as? String ?? "~") < back.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true)), "\(lines[0])")
    }
}
}
