import Bot
import FrameCrypto
import Foundation
import GStreamerKit
import Testing
import TestSupport

extension MediaScene {
    /// H.264 from the test pattern through Janus to the recorder, sealed per ECall slice.
    @Suite struct VideoTests {
        /// Records a room while one player sends `source` (the test pattern for `seconds`, or a
        /// file to its end) as user 3.
        func record(player: FrameProtection, recorder: FrameProtection, source: Player.Source = .testPattern, seconds: Double? = nil,
                    tap: FrameTap? = nil) async throws -> (RecordingManifest, URL, Player.Report) {
            let room = try await Scene.createRoom()
            let out = try Scene.tempDirectory("video").appendingPathComponent("rec")
            let recording = Task { try await Recorder(config: try Scene.config(room: room, display: "9:Rec", protection: recorder, tap: tap), directory: out).run() }
            try await Task.sleep(for: .seconds(1))
            let report = try await Player(config: try Scene.config(room: room, display: "3:Sender", protection: player),
                                          source: source, duration: seconds.map { .seconds($0) }).run()
            try await Task.sleep(for: .seconds(1))
            recording.cancel()
            return (try await recording.value, out, report)
        }

        @Test func testPatternVideoIsRecordedDecrypted() async throws {
            let ring = KeyRing(current: .random())
            let frames = FrameLog()
            let (manifest, out, report) = try await record(player: .e2ee(ring), recorder: .e2ee(ring), seconds: 6, tap: frames.tap)
            #expect(report.videoFramesSent >= 55, "6 s at 10 fps")
            let video = try #require(manifest.feeds.first { $0.kind == "video" })
            let audio = try #require(manifest.feeds.first { $0.kind == "audio" })
            #expect(video.feedID == audio.feedID && video.codec == "h264" && video.file.hasSuffix(".mkv"))
            #expect(video.frames.opened > 30 && video.frames.droppedTotal == 0)
            #expect((video.keyFrameRequests ?? 0) >= 1, "a keyframe is asked for when the feed is added")
            #expect(video.width == 640 && video.height == 360)
            #expect((video.keyFrames ?? 0) >= 2, "an IDR every 2 s, and one on request")
            #expect(manifest.timeline.map(\.event) == ["joined", "left"] && manifest.timeline.allSatisfy { $0.feedID == video.feedID })

            // Frames in flight are sealed: an audio frame grew by 29 bytes, a video access unit by
            // 28 per slice (x264 here cuts 1–2 slices per frame). Audio and video are tapped on
            // two streaming threads, so they are told apart (a length-prefixed AU starts 00 00,
            // an Opus frame does not) before before/after are paired.
            let isVideo = { (f: [UInt8]) in f.count > 4 && f[0] == 0 && f[1] == 0 }
            func growth(video: Bool) -> [Int] {
                let sealed = frames.frames(.beforeOpen).filter { isVideo($0) == video }.map(\.count)
                let opened = frames.frames(.afterOpen).filter { isVideo($0) == video }.map(\.count)
                #expect(sealed.count == opened.count)
                return zip(sealed, opened).map { $0 - $1 }
            }
            let audioGrew = growth(video: false), videoGrew = growth(video: true)
            #expect(audioGrew.count >= 200 && audioGrew.allSatisfy { $0 == 29 }, "\(Set(audioGrew))")
            #expect(videoGrew.count >= 30 && videoGrew.allSatisfy { $0 > 0 && $0 % 28 == 0 }, "\(Set(videoGrew))")

            // The recording decodes to the pattern: black and white halves of every second.
            let luma = try await Audio.videoLuma(out.appendingPathComponent(video.file))
            #expect(luma.count >= 30, "\(luma.count) frames decoded")
            #expect(luma.filter { $0 > 200 }.count >= 10 && luma.filter { $0 < 40 }.count >= 10, "flashes: \(luma.map { Int($0) })")
        }

        @Test func recordingIsOneMatroskaWithFlashAndTickInSync() async throws {
            let ring = KeyRing(current: .random())
            let (manifest, out, _) = try await record(player: .e2ee(ring), recorder: .e2ee(ring), seconds: 8)
            let video = try #require(manifest.feeds.first { $0.kind == "video" })
            let audio = try #require(manifest.feeds.first { $0.kind == "audio" })
            #expect(video.file == audio.file && video.file == "\(video.feedID)-3.mkv", "one file per publisher")
            let left = try FileManager.default.contentsOfDirectory(atPath: out.path).sorted()
            #expect(left == [video.file, "manifest.json"], "track files were merged away: \(left)")

            let file = out.appendingPathComponent(video.file)
            let info = try MediaInfo.discover(file.path)
            #expect(info.videoCaps?.hasPrefix("video/x-h264") == true && info.audioCaps?.hasPrefix("audio/x-opus") == true)
            // As long as what the recorder wrote (first to last media time of both tracks), within 5 %;
            // that is what was sent but the start the recorder missed while subscribing.
            let first = min(try #require(audio.firstMediaTime), try #require(video.firstMediaTime))
            let last = max(try #require(audio.lastMediaTime), try #require(video.lastMediaTime))
            let facts = "\(video.keyFrameRequests ?? 0) PLIs; file \(info.duration) s; media \(first)…\(last) s; video from \(video.firstMediaTime!) s; \(audio.frames.opened) audio frames"
            #expect(abs(info.duration - (last - first)) <= 0.05 * (last - first), "\(facts)")
            #expect(last - first >= 8 - 1.5, "at most the subscription setup is missing: \(facts)")
            #expect(Double(audio.frames.opened) * 0.02 >= 0.95 * (last - first), "no gaps in the audio: \(facts)")
            // Keyframes are asked for until one comes, instead of waiting for the sender's next (2 s).
            #expect(video.firstMediaTime! - audio.firstMediaTime! <= 1.5, "\(facts)")

            let offsets = try await AVSync.tickMinusFlash(file)
            #expect(offsets.count >= 5, "\(offsets.count) flashes found")
            #expect(offsets.allSatisfy { abs($0) <= 0.040 }, "tick − flash: \(offsets.map { Int($0 * 1000) }) ms")
        }

        /// A wrong key drops every frame: keyframes would not help, and asking every second made
        /// the publisher send one a second (issue 39: Chromium encoded 19 keyframes in 18 s for one
        /// wrong-key recorder once the requests reached it). It asks until a keyframe arrived.
        @Test func wrongKeyDropsVideoAndStopsAskingForKeyframesOnceOneArrived() async throws {
            let (manifest, out, _) = try await record(player: .e2ee(KeyRing(current: .random())), recorder: .e2ee(KeyRing(current: .random())), seconds: 5)
            // Nothing opened, nothing written: no file, the track listed as unrecorded.
            #expect(!manifest.feeds.contains { $0.kind == "video" } && manifest.errors.isEmpty)
            let video = try #require(manifest.unrecorded.first { $0.kind == "video" })
            #expect(video.frames.received > 20)
            #expect(video.frames.opened == 0)
            #expect(video.frames.dropped["no_key_opens"] == video.frames.received)
            let seconds = try #require(video.lastFrame).timeIntervalSince(try #require(video.firstFrame))
            let plis = video.keyFrameRequests ?? 0
            #expect(plis >= 1 && plis <= 2, "\(plis) keyframe requests over \(seconds) s")
            // Nothing decodable to merge: no half-written file is left beside the track files.
            let files = try FileManager.default.contentsOfDirectory(atPath: out.path)
            #expect(!files.contains { $0.hasPrefix("\(video.feedID)-") && ($0.hasSuffix(".mkv") || $0.hasSuffix(".mka")) }, "\(files)")
        }
    
        @Test func h264TheRoomTakesIsSentWithoutReencoding() async throws {
            let dir = try Scene.tempDirectory("asis")
            let clip = dir.appendingPathComponent("baseline15.mp4")
            // 6 s of constrained baseline at 15 fps: above the envelope's 10 fps, but a profile
            // the room takes, so it must arrive at 15 fps with the encoder's own SPS/PPS.
            try await runToEnd("""
                videotestsrc num-buffers=90 ! video/x-raw,width=640,height=360,framerate=15/1 ! x264enc key-int-max=30 bframes=0 ! video/x-h264,profile=constrained-baseline ! h264parse ! queue ! mp4mux name=m ! filesink location="\(clip.path)" \
                audiotestsrc num-buffers=282 ! audio/x-raw,rate=48000 ! avenc_aac ! queue ! m.
                """)
            let source = try #require(try MediaInfo.discover(clip.path).videoCaps)
            let ring = KeyRing(current: .random())
            let (manifest, out, report) = try await record(player: .e2ee(ring), recorder: .e2ee(ring), source: .file(clip.path))

            #expect((85...90).contains(report.videoFramesSent), "6 s at 15 fps: \(report.videoFramesSent)")
            let video = try #require(manifest.feeds.first { $0.kind == "video" })
            #expect(video.frames.droppedTotal == 0 && video.width == 640 && video.height == 360)
            // By the pictures' timestamps: a stream's first packets wait for lip sync (the direct
            // receive path) and then arrive together, so arrival times would read a higher rate.
            let seconds = try #require(video.lastMediaTime) - (try #require(video.firstMediaTime))
            let fps = Double(video.frames.received - 1) / seconds
            #expect(abs(fps - 15) <= 1.5, "received at \(fps) fps")
            // Not re-encoded: the recording carries the file's own SPS/PPS, byte for byte.
            let written = try #require(try MediaInfo.discover(out.appendingPathComponent(video.file).path).videoCaps)
            let codecData = { (caps: String) in caps.range(of: "codec_data=(buffer)").map { caps[$0.upperBound...].prefix { $0.isHexDigit } } }
            #expect(codecData(written) != nil && codecData(written) == codecData(source), "\(written)")
        }

        @Test func videoFileIsTranscodedToTheEnvelope() async throws {
            let dir = try Scene.tempDirectory("clip")
            let clip = dir.appendingPathComponent("clip.mp4")
            // 6 s of 1280x720 at 30 fps (High profile) with AAC audio: outside ECall's envelope.
            try await runToEnd("""
                videotestsrc num-buffers=180 ! video/x-raw,width=1280,height=720,framerate=30/1 ! x264enc ! h264parse ! queue ! mp4mux name=m ! filesink location="\(clip.path)" \
                audiotestsrc num-buffers=282 ! audio/x-raw,rate=48000 ! avenc_aac ! queue ! m.
                """)
            let ring = KeyRing(current: .random())
            let (manifest, out, report) = try await record(player: .e2ee(ring), recorder: .e2ee(ring), source: .file(clip.path))

            #expect((55...62).contains(report.videoFramesSent), "6 s at 10 fps: \(report.videoFramesSent)")
            #expect((295...305).contains(report.framesSent), "6 s of 20 ms audio frames: \(report.framesSent)")
            let video = try #require(manifest.feeds.first { $0.kind == "video" })
            #expect(video.width == 852 && video.height == 480, "fits 854x480 with the clip's 16:9")
            #expect(video.frames.droppedTotal == 0)
            // By the pictures' timestamps: a stream's first packets wait for lip sync (the direct
            // receive path) and then arrive together, so arrival times would read a higher rate.
            let seconds = try #require(video.lastMediaTime) - (try #require(video.firstMediaTime))
            let fps = Double(video.frames.received - 1) / seconds
            #expect(abs(fps - 10) <= 1, "received at \(fps) fps")
            // The written file is what a player sees: constrained baseline at 852x480.
            let info = try MediaInfo.discover(out.appendingPathComponent(video.file).path)
            let caps = try #require(info.videoCaps)
            #expect(caps.contains("width=(int)852") && caps.contains("height=(int)480"), "\(caps)")
            #expect(caps.contains("constrained-baseline"), "\(caps)")
        }
}
}
