import Bot
import Foundation
import Janus
import Testing
import TestSupport

/// Every way a user ends `sfubot record`, for each kind of media, checked by decoding what is
/// on disk: the stop finishes the files (it is never cut short), the manifest says what each
/// file holds, and exit 0 means nothing was lost. On a8caa6a an A/V recording stopped with
/// Ctrl-C or SIGTERM was a 0-byte .mkv with exit 0.
extension MediaScene {
@Suite struct RecordingEndingsTests {
    enum Ending: String, CaseIterable, Sendable { case sigint, sigterm, twoSignals, duration, publisherLeft }
    enum Media: String, CaseIterable, Sendable { case audio, audioVideo, audioWithMix, resizingVideo }

    /// 5 s at 640x360 then 5 s at 320x180 in one H.264 stream (MPEG-TS carries the new SPS in
    /// band), constrained baseline so it is sent as it is: the picture size changes mid-call.
    static func resizingClip(in dir: URL) async throws -> URL {
        let clip = dir.appendingPathComponent("resize.ts")
        try await runToEnd("""
            concat name=vc ! h264parse ! queue ! mpegtsmux name=m ! filesink location="\(clip.path)" \
            videotestsrc num-buffers=75 ! video/x-raw,width=640,height=360,framerate=15/1 ! x264enc key-int-max=15 bframes=0 ! video/x-h264,profile=constrained-baseline ! vc. \
            videotestsrc num-buffers=75 ! video/x-raw,width=320,height=180,framerate=15/1 ! x264enc key-int-max=15 bframes=0 ! video/x-h264,profile=constrained-baseline ! vc. \
            audiotestsrc num-buffers=470 ! audio/x-raw,rate=48000 ! avenc_aac ! queue ! m.
            """)
        return clip
    }

    let key = String(repeating: "cd", count: 32)

    @Test("every ending keeps every frame written, for every media kind",
          arguments: Ending.allCases, Media.allCases)
    func endingKeepsEverything(_ ending: Ending, _ media: Media) async throws {
        try await ends(ending, media)
    }

    @Test("the webrtcbin receive path (the fallback): Ctrl-C and the publisher leaving keep every frame, audio and video",
          arguments: [Ending.sigint, .publisherLeft])
    func webrtcbinEndingKeepsEverything(_ ending: Ending) async throws {
        try await ends(ending, .audioVideo, path: "webrtcbin")
    }

    func ends(_ ending: Ending, _ media: Media, path: String = "direct") async throws {
        let room = try await Scene.createRoom()
        let dir = try Scene.tempDirectory("end-\(ending.rawValue)-\(media.rawValue)-\(path)")
        let out = dir.appendingPathComponent("rec"), mix = dir.appendingPathComponent("call.opus")
        var recordArgs = ["record", "--janus", Scene.janusURL!, "--room", "\(room)", "--key-hex", key, "--out", out.path, "--receive-path", path]
        if media == .audioWithMix { recordArgs += ["--mix", mix.path] }
        if ending == .duration { recordArgs += ["--duration", "9"] }
        let recorder = try MediaScene.CLITests.start(recordArgs)
        try await Task.sleep(for: .seconds(1))
        // The publisher goes on past the stop, except where its leaving is the ending.
        let publishSeconds = ending == .publisherLeft ? "6" : "30"
        var playArgs = ["play", "--janus", Scene.janusURL!, "--room", "\(room)", "--key-hex", key, "--display", "5:Eve", "--duration", publishSeconds]
        switch media {
        case .audioVideo: playArgs.insert("--test-pattern", at: 1)
        case .resizingVideo: playArgs.insert(contentsOf: [try await Self.resizingClip(in: dir).path], at: 1)
        case .audio, .audioWithMix: playArgs.insert(try await Audio.tone(440, seconds: 40, in: dir).path, at: 1)
        }
        let playerStarted = Date()
        let player = try MediaScene.CLITests.start(playArgs)
        defer { player.signal(SIGKILL) }
        try await Task.sleep(for: .seconds(8))
        let stopped = Date()
        switch ending {
        case .sigint: recorder.signal(SIGINT)
        case .sigterm: recorder.signal(SIGTERM)
        case .twoSignals:
            recorder.signal(SIGINT)
            try await Task.sleep(for: .milliseconds(300))
            recorder.signal(SIGINT)
        case .duration: break
        case .publisherLeft:
            // It left at 6 s; its files were finished then. The recorder is stopped after.
            recorder.signal(SIGINT)
        }
        let finished = await recorder.finished()
        #expect(finished.status == 0, "exit \(finished.status): \(finished.errText.suffix(2000))")
        let manifest = try RecordingManifest.read(from: out)
        #expect(manifest.errors.isEmpty, "\(manifest.errors.map(\.error))")
        let feeds = manifest.feeds.filter { $0.userID == "5" }
        let withVideo = media == .audioVideo || media == .resizingVideo
        #expect(Set(feeds.map(\.kind)) == (withVideo ? ["audio", "video"] : ["audio"]), "\(feeds.map(\.file))")
        for feed in feeds {
            let disk = try #require(feed.onDisk, "\(feed.file) was read back")
            #expect(disk.frames == feed.written && disk.frames > 0, "\(feed.file) \(feed.kind): \(disk.frames) on disk, \(feed.written ?? -1) written")
        }
        // About 8 s were published while it recorded (less what precedes its subscription); the
        // recording holds it as a user decodes it: every frame from the first it got to its stop,
        // 6.5 s unless the player took longer to start (a busy machine delays the first frame,
        // never the stop).
        let firstFrame = try #require(feeds.first { $0.kind == "audio" }?.firstFrame, "the audio's first frame")
        let stop = ending == .duration ? manifest.started.addingTimeInterval(9) : stopped
        // The player that leaves publishes 6 s from its start, less its own join.
        let left = playerStarted.addingTimeInterval(6)
        let expected = ending == .publisherLeft ? min(5.0, left.timeIntervalSince(firstFrame) - 0.5) : min(6.5, stop.timeIntervalSince(firstFrame) - 0.5)
        if media == .resizingVideo {
            // One file with both tracks across the size change; FFmpeg decodes every picture
            // written, at the sizes (parts) the manifest gives.
            let video = try #require(feeds.first { $0.kind == "video" })
            let audio = try #require(feeds.first { $0.kind == "audio" })
            #expect(video.file == audio.file && video.notMerged == nil, "\(feeds.map(\.file)) \(feeds.map(\.notMerged))")
            let file = out.appendingPathComponent(video.file)
            let runs = try await Pictures.runs(file)
            let parts = video.parts ?? []
            #expect(parts.count >= 2 && parts.dropFirst().allSatisfy { $0.cause != nil }, "\(parts)")
            #expect(runs == parts.map { Pictures.Run(width: $0.width ?? 0, height: $0.height ?? 0, count: $0.frames) }, "ffprobe: \(runs), manifest: \(parts)")
            let pictures = runs.reduce(0) { $0 + $1.count }
            #expect(pictures == video.written, "\(pictures) pictures decoded, \(video.written ?? -1) written")
            #expect(Double(pictures) >= expected * 13, "\(pictures) pictures at 15 fps")
            #expect(Double(try await Audio.decode(file).count) / 48000 >= expected)
        } else if media == .audioVideo {
            #expect(feeds.map(\.file) == ["\(feeds[0].feedID)-5.mkv", "\(feeds[0].feedID)-5.mkv"], "one file with both tracks: \(feeds.map(\.file))")
            let file = out.appendingPathComponent(feeds[0].file)
            let pictures = try await Audio.videoLuma(file).count
            let video = try #require(feeds.first { $0.kind == "video" })
            #expect(pictures == video.written, "\(pictures) pictures decoded of \(video.written ?? -1) written")
            #expect(Double(pictures) >= expected * 9, "\(pictures) pictures (the pattern sends 10 a second)")
            let seconds = Double(try await Audio.decode(file).count) / 48000
            #expect(seconds >= expected, "\(seconds) s of audio in \(file.lastPathComponent)")
            let names = try FileManager.default.contentsOfDirectory(atPath: out.path)
            #expect(!names.contains { $0.hasSuffix(".audio.mka") || $0.hasSuffix(".video.mkv") || $0.hasSuffix(".partial") }, "\(names)")
        } else {
            let samples = try await Audio.decode(out.appendingPathComponent(feeds[0].file))
            let seconds = Double(samples.count) / 48000
            #expect(seconds >= expected, "\(seconds) s decoded")
            #expect(abs((Audio.dominantFrequency(samples) ?? 0) - 440) <= 9)
        }
        if media == .audioWithMix {
            let mixed = try await Audio.decode(mix)
            #expect(Double(mixed.count) / 48000 >= expected, "the mix holds \(Double(mixed.count) / 48000) s")
            #expect(manifest.mixOnDisk?.frames ?? 0 > 0 && manifest.mixOnDisk?.decoded == manifest.mixOnDisk?.frames)
        }
    }

    /// Checks one A/V participant's recording in `out`: one merged file whose every picture and
    /// audio frame decodes as written, at least `seconds` long.
    func expectOneAVFile(in out: URL, user: String, seconds: Double) async throws {
        let manifest = try RecordingManifest.read(from: out)
        let feeds = manifest.feeds.filter { $0.userID == user }
        let video = try #require(feeds.first { $0.kind == "video" }, "\(manifest.feeds.map(\.file))")
        #expect(feeds.count == 2 && feeds.allSatisfy { $0.file == video.file && $0.file.hasSuffix("-\(user).mkv") }, "\(feeds.map(\.file))")
        for feed in feeds { #expect(feed.onDisk?.frames == feed.written && feed.written ?? 0 > 0, "\(feed.kind): \(String(describing: feed.onDisk))") }
        let file = out.appendingPathComponent(video.file)
        let pictures = try await Audio.videoLuma(file).count
        #expect(pictures == video.written && Double(pictures) >= seconds * 9, "\(pictures) pictures, \(video.written ?? -1) written")
        let audio = Double(try await Audio.decode(file).count) / 48000
        #expect(audio >= seconds, "\(audio) s of audio decoded, \(pictures) pictures")
    }

    @Test("the room destroyed mid-call: the recording ends by itself, every file whole, exit 0")
    func roomDestroyed() async throws {
        let room = try await Scene.createRoom()
        let out = try Scene.tempDirectory("end-destroyed").appendingPathComponent("rec")
        let recorder = try MediaScene.CLITests.start(["record", "--janus", Scene.janusURL!, "--room", "\(room)", "--key-hex", key, "--out", out.path])
        defer { recorder.signal(SIGKILL) }
        try await Task.sleep(for: .seconds(1))
        let player = try MediaScene.CLITests.start(["play", "--test-pattern", "--janus", Scene.janusURL!, "--room", "\(room)", "--key-hex", key,
                                                    "--display", "3:Ray", "--duration", "30"])
        defer { player.signal(SIGKILL) }
        // 8 s from the first media on disk (the lanes once decoded under 6 s of audio after a
        // fixed 8 s from the player's start).
        #expect(await eventually(within: 30) { mediaOnDisk(in: out) }, "no media recorded")
        try await Task.sleep(for: .seconds(8))
        let session = try await JanusSession.connect(url: Scene.janusURL!, logger: Scene.logger)
        _ = try await session.attach(plugin: VideoRoom.plugin).message(["request": "destroy", "room": .int(room)])
        await session.close()
        let status = await recorder.exit(within: .seconds(30))
        #expect(status == 0, "the recorder ends with the room: \(String(describing: status))")
        try await expectOneAVFile(in: out, user: "3", seconds: 6)
        #expect(try RecordingManifest.read(from: out).errors.isEmpty)
    }

    @Test("Janus killed for good: after --rejoin-timeout the files are whole, the exit says Janus is gone")
    func janusGoneForGood() async throws {
        let dir = try Scene.tempDirectory("end-janus-gone")
        try await OwnJanus.with(port: 8211, in: dir) { janus in
            let session = try await JanusSession.connect(url: janus.url, logger: Scene.logger)
            let room = try await VideoRoom.createRoom(try await session.attach(plugin: VideoRoom.plugin))
            await session.close()
            let out = dir.appendingPathComponent("rec")
            let recorder = try MediaScene.CLITests.start(["record", "--janus", janus.url, "--room", "\(room)", "--key-hex", key, "--out", out.path,
                                                          "--rejoin-timeout", "3"])
            defer { recorder.signal(SIGKILL) }
            try await Task.sleep(for: .seconds(1))
            let player = try MediaScene.CLITests.start(["play", "--test-pattern", "--janus", janus.url, "--room", "\(room)", "--key-hex", key,
                                                        "--display", "1:Gus", "--duration", "30", "--rejoin-timeout", "3"])
            defer { player.signal(SIGKILL) }
            // 8 s of media before the kill, counted from when it reaches the disk (a loaded
            // machine joins late: CI once decoded under 6 s of audio after a fixed 8 s).
            #expect(await eventually(within: 30) { mediaOnDisk(in: out) }, "no media recorded")
            try await Task.sleep(for: .seconds(8))
            try await janus.kill9()
            let status = await recorder.exit(within: .seconds(30))
            #expect(status == 69, "EX_UNAVAILABLE once the rejoin timeout ran out: \(String(describing: status))")
            try await expectOneAVFile(in: out, user: "1", seconds: 6)
        }
    }
}
}
