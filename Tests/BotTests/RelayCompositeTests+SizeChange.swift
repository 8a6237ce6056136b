import Foundation
import Testing
import TestSupport

extension MediaScene.RelayCompositeTests {
    /// 6 s of red at 640x360 then 6 s of blue at 180x320 (a new SPS and a keyframe at the
    /// change, as a phone turned to portrait sends), 15 fps, and a 440 Hz tone
    /// throughout in AAC: the size-change test's recipe (SizeChangeTests), one colour a size.
    static func twoSizes(in dir: URL) async throws -> URL {
        let clip = dir.appendingPathComponent("two-sizes.ts")
        let part = { (pattern: String, w: Int, h: Int) in
            "videotestsrc num-buffers=90 pattern=\(pattern) ! video/x-raw,width=\(w),height=\(h),framerate=15/1 ! x264enc key-int-max=30 bframes=0 tune=zerolatency speed-preset=ultrafast ! video/x-h264,profile=constrained-baseline ! vc. "
        }
        try await runToEnd("""
            concat name=vc ! h264parse ! queue ! mpegtsmux name=m ! filesink location="\(clip.path)" \
            \(part("red", 640, 360))\(part("blue", 180, 320)) \
            audiotestsrc num-buffers=563 freq=440 volume=0.5 ! audio/x-raw,rate=48000 ! avenc_aac ! queue ! m.
            """)
        return clip
    }

    /// One publisher whose picture changes size mid-stream, alone in a grid: the composite goes
    /// on in the same RTMP connection at 1280x720; the tile first shows the red 16:9 picture
    /// filling the frame, then the blue portrait one scaled into the middle (x 437 to 842) with black
    /// beside it (its new aspect ratio: the decoder and the pad followed the new SPS), and the tone sounds throughout.
    @Test("a participant's picture changes size (640x360 red → 180x320 blue): one connection, the tile shows the new picture at its own aspect, the tone goes on")
    func pictureSizeChangeInsideTheComposite() async throws {
        let dir = try Scene.tempDirectory("relay-composite-sizes")
        let clip = try await Self.twoSizes(in: dir)
        let port = try RelayServers.freePort()
        let nginx = try await RelayServers.nginxRTMP(port: port, in: dir)
        let room = try await Scene.createRoom()
        let url = "rtmp://127.0.0.1:\(port)/live/sizes"
        let relay = try CompositeCase.relay(to: url, room: room, seconds: 17)
        try await Task.sleep(for: .seconds(1))
        let ann = try CompositeCase.play(clip, as: "7:Ann", room: room)
        let got = dir.appendingPathComponent("got.flv")
        let read = await RelayCase.readBack(url, seconds: 12, to: got)
        let (ran, played) = (await relay.finished(), await ann.finished())
        await nginx.stop()

        #expect(read, "nothing came back from nginx: \(ran.errText.suffix(1500))")
        #expect(played.status == 0, "play: \(played.errText.suffix(800))")
        #expect(ran.status == 0, "relay exited \(ran.status): \(ran.outText) \(ran.errText.suffix(1500))")
        let c = RelayCase.counters(ran.outText)
        #expect(c.outputs == 1 && c.failures == 0 && c.dropped == 0, "one connection throughout: \(ran.outText)")
        let runs = try await Pictures.runs(got)
        #expect(runs.count == 1 && runs.first.map { $0.width == 1280 && $0.height == 720 && $0.count >= 10 * 22 } == true, "\(runs)")

        let pictures = try await CompositeCase.pictures(got)
        let described = pictures.map { "\($0.at): \($0.left)/\($0.centre)/\($0.right)" }
        let wide = pictures.filter { $0.left == .red && $0.centre == .red && $0.right == .red }
        let portrait = pictures.filter { $0.left == .black && $0.centre == .blue && $0.right == .black }
        #expect(wide.count >= 6 && portrait.count >= 6, "red 16:9 filling the frame, then blue portrait between black: \(described)")
        let lastWide = wide.map(\.at).max() ?? .infinity, firstPortrait = portrait.map(\.at).min() ?? -1
        #expect(lastWide < firstPortrait, "the new size after the old, once: \(described)")

        let tones = CompositeCase.tones(try await RelayCase.audioSamples(got), [440])
        let seconds = tones.filter { $0 == [440] }.count
        #expect(seconds >= tones.count - 2 && seconds >= 9, "seconds with the tone: \(tones)")
    }
}
