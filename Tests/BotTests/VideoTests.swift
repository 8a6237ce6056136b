import Bot
import FrameCrypto
import Foundation
import Testing

extension MediaScene {
    /// H.264 from the test pattern through Janus to the recorder, sealed per ECall slice.
    @Suite struct VideoTests {
        func record(player: FrameProtection, recorder: FrameProtection, seconds: Double, tap: FrameTap? = nil) async throws -> (RecordingManifest, URL, Player.Report) {
            let room = try await Scene.createRoom()
            let out = try Scene.tempDirectory("video").appendingPathComponent("rec")
            let recording = Task { try await Recorder(config: try Scene.config(room: room, display: "9:Rec", protection: recorder, tap: tap), directory: out).run() }
            try await Task.sleep(for: .seconds(1))
            let report = try await Player(config: try Scene.config(room: room, display: "3:Pattern", protection: player),
                                          source: .testPattern, duration: .seconds(seconds)).run()
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
            #expect(video.feedID == audio.feedID && video.codec == "h264" && video.file.hasSuffix(".h264"))
            #expect(video.frames.opened > 30 && video.frames.droppedTotal == 0)
            #expect((video.keyFrameRequests ?? 0) >= 1, "a keyframe is asked for when the feed is added")
            #expect(video.width == 640 && video.height == 360)
            #expect((video.keyFrames ?? 0) >= 2, "an IDR every 2 s, and one on request")
            #expect(manifest.timeline.map(\.event) == ["joined", "left"] && manifest.timeline.allSatisfy { $0.feedID == video.feedID })

            // Frames in flight are sealed: an audio frame grew by 29 bytes, a video access unit by
            // 28 per slice (x264 here cuts 1–2 slices per frame); 29 is no multiple of 28.
            let sealedSizes = frames.frames(.beforeOpen).map(\.count), openedSizes = frames.frames(.afterOpen).map(\.count)
            #expect(sealedSizes.count == openedSizes.count)
            let grew = zip(sealedSizes, openedSizes).map { $0 - $1 }
            #expect(grew.allSatisfy { $0 == 29 || ($0 > 0 && $0 % 28 == 0) }, "\(Set(grew))")
            #expect(grew.filter { $0 % 28 == 0 }.count >= 30, "video access units carry sealed slices")

            // The recording decodes to the pattern: black and white halves of every second.
            let luma = try await Audio.videoLuma(out.appendingPathComponent(video.file))
            #expect(luma.count >= 30, "\(luma.count) frames decoded")
            #expect(luma.filter { $0 > 200 }.count >= 10 && luma.filter { $0 < 40 }.count >= 10, "flashes: \(luma.map { Int($0) })")
        }

        @Test func wrongKeyDropsVideoAndAsksForKeyframesAtMostOncePerSecond() async throws {
            let (manifest, _, _) = try await record(player: .e2ee(KeyRing(current: .random())), recorder: .e2ee(KeyRing(current: .random())), seconds: 5)
            let video = try #require(manifest.feeds.first { $0.kind == "video" })
            #expect(video.frames.received > 20)
            #expect(video.frames.opened == 0)
            #expect(video.frames.dropped["no_key_opens"] == video.frames.received)
            let seconds = try #require(video.lastFrame).timeIntervalSince(try #require(video.firstFrame))
            let plis = video.keyFrameRequests ?? 0
            #expect(plis >= 2 && Double(plis) <= seconds + 2, "\(plis) PLIs over \(seconds) s")
        }
    }
}
