import FrameCrypto
import Foundation
import GStreamerKit
import Testing
@testable import Bot
import TestSupport

/// Issue 39, item 7: a publisher changing its picture size twice, with a long GOP as libwebrtc
/// sends (a keyframe at each change, none between): every frame sent arrives, is counted where
/// it arrives (before the depayloader), is written, and decodes from the file at its size.
extension MediaScene {
@Suite struct SizeChangeTests {
    /// 6 s at each of 640x360, 320x180, 480x270, 10 fps, one keyframe per size.
    static func clip(in dir: URL) async throws -> URL {
        let clip = dir.appendingPathComponent("sizes.ts")
        let part = { (w: Int, h: Int) in
            "videotestsrc num-buffers=60 pattern=ball ! video/x-raw,width=\(w),height=\(h),framerate=10/1 ! x264enc key-int-max=1000 bframes=0 tune=zerolatency ! video/x-h264,profile=constrained-baseline ! vc. "
        }
        try await runToEnd("""
            concat name=vc ! h264parse ! queue ! mpegtsmux name=m ! filesink location="\(clip.path)" \
            \(part(640, 360))\(part(320, 180))\(part(480, 270)) \
            audiotestsrc num-buffers=850 ! audio/x-raw,rate=48000 ! avenc_aac ! queue ! m.
            """)
        return clip
    }

    @Test("two size changes, a keyframe at each only: frames sent = arrived = written = decoded from the file, at three sizes; a wrong key's recorder arrives at as many")
    func everyFrameAcrossSizeChanges() async throws {
        let dir = try Scene.tempDirectory("sizes")
        let clip = try await Self.clip(in: dir)
        let room = try await Scene.createRoom()
        let ring = KeyRing(current: .random())
        func recorder(_ name: String, _ ring: KeyRing) throws -> Task<RecordingManifest, any Error> {
            let config = try Scene.config(room: room, display: "9:\(name)", protection: .e2ee(ring))
            let out = dir.appendingPathComponent(name)
            return Task { try await Recorder(config: config, directory: out).run() }
        }
        let right = try recorder("right", ring), wrong = try recorder("wrong", KeyRing(current: .random()))
        try await Task.sleep(for: .seconds(2))
        let report = try await Player(config: try Scene.config(room: room, display: "3:Sizes", protection: .e2ee(ring)), source: .file(clip.path)).run()
        try await Task.sleep(for: .seconds(1.5))
        right.cancel()
        wrong.cancel()
        let manifest = try await right.value, other = try await wrong.value
        let video = try #require(manifest.feeds.first { $0.kind == "video" }, "\(manifest.feeds.map(\.file))")
        let otherVideo = try #require(other.unrecorded.first { $0.kind == "video" })
        let runs = try await Pictures.runs(dir.appendingPathComponent("right").appendingPathComponent(video.file))
        let decoded = runs.reduce(0) { $0 + $1.count }
        let facts = "sent \(report.videoFramesSent); arrived \(video.arrived ?? -1) (wrong key: \(otherVideo.arrived ?? -1)); received \(video.frames.received) (wrong key: \(otherVideo.frames.received)); written \(video.written ?? -1); on disk \(video.onDisk?.frames ?? -1); decoded \(runs); parts \((video.parts ?? []).map { "\($0.width ?? 0)x\($0.height ?? 0):\($0.frames)" })"
        print("size changes: \(facts)")
        #expect(manifest.errors.isEmpty, "\(manifest.errors.map(\.error))")
        #expect(runs.map { "\($0.width)x\($0.height)" } == ["640x360", "320x180", "480x270"], "\(facts)")
        // The recorder subscribed before the player joined: it misses at most what precedes its first keyframe.
        #expect(report.videoFramesSent >= 175 && Double(video.arrived ?? 0) >= Double(report.videoFramesSent) * 0.97, "\(facts)")
        #expect(video.frames.received == video.arrived && video.written == video.frames.received, "\(facts)")
        #expect(video.onDisk?.frames == video.written && decoded == video.written, "\(facts)")
        #expect(abs((otherVideo.arrived ?? 0) - (video.arrived ?? 0)) <= 3, "\(facts)")
    }
}
}
