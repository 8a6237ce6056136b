import Bot
import FrameCrypto
import Foundation
import Testing
import TestSupport

/// Issue 27, part 5: a paused recording writes nothing of the call; its files go on after
/// resume, one per participant, with a media-time gap, video from a keyframe.
extension MediaScene {
@Suite struct PauseTests {
    @Test("a recording paused for 3 s: nothing written meanwhile, the files go on after it with a media-time gap, video from a keyframe")
    func pauseAndResume() async throws {
        let dir = try Scene.tempDirectory("pause")
        let tone = try await Audio.tone(440, seconds: 12, in: dir)
        let ring = KeyRing(current: .random())
        let room = try await Scene.createRoom()
        let out = dir.appendingPathComponent("rec")
        var recorder = Recorder(config: try Scene.config(room: room, display: "9:Rec", protection: .e2ee(ring)), directory: out)
        let pauses = RecordingPauses()
        recorder.pauses = pauses
        let recording = Task { [recorder] in try await recorder.run() }
        try await Task.sleep(for: .seconds(1))
        let voice = Task { try await Player(config: try Scene.config(room: room, display: "3:Tone", protection: .e2ee(ring)), source: .file(tone.path), duration: .seconds(11)).run() }
        let camera = Task { try await Player(config: try Scene.config(room: room, display: "4:Cam", protection: .e2ee(ring)), source: .testPattern, duration: .seconds(11)).run() }
        try await Task.sleep(for: .seconds(4))
        #expect(pauses.pause())
        #expect(!pauses.pause(), "a second pause changes nothing")
        try await Task.sleep(for: .seconds(3))
        #expect(pauses.resume())
        try await Task.sleep(for: .seconds(4))
        recording.cancel()
        let manifest = try await recording.value
        voice.cancel(); camera.cancel()

        #expect(manifest.errors.isEmpty, "\(manifest.errors)")
        let pause = try #require(manifest.pauses.first)
        #expect(manifest.pauses.count == 1 && (2.5...3.8).contains(pause.seconds ?? 0), "\(manifest.pauses)")

        // Audio: ~150 frames of 20 ms dropped; the file holds the rest, and 3 s of silence where
        // the pause was once its timestamps are honoured.
        let voiceFeed = try #require(manifest.feeds.first { $0.userID == "3" })
        let paused = try #require(voiceFeed.pausedFrames)
        #expect((120...190).contains(paused), "\(paused) frames dropped while paused")
        #expect((voiceFeed.written ?? 0) + paused <= voiceFeed.frames.opened, "\(voiceFeed.frames) written \(voiceFeed.written ?? -1)")
        let file = out.appendingPathComponent(voiceFeed.file)
        let plain = try await Audio.decode(file)
        let decodedSeconds = Double(plain.count) / 48000, writtenSeconds = Double(voiceFeed.written ?? 0) * 0.02
        #expect(abs(decodedSeconds - writtenSeconds) < 0.3, "decoded \(decodedSeconds) s of \(writtenSeconds) s written")
        let timed = try await Audio.decodeTimed(file)
        let quiet = Audio.quietWindows(timed)
        let span: Double = (quiet.last ?? 0) - (quiet.first ?? 0) + 0.1
        #expect(quiet.count >= 22 && (2.3...3.9).contains(span), "quiet from \(quiet.first ?? -1) for \(span) s (\(quiet.count) windows)")
        let frequency = Audio.dominantFrequency(plain) ?? 0
        #expect(abs(frequency - 440) < 9, "\(frequency) Hz")

        // Video: dropped while paused, then from a keyframe: FFmpeg decodes every picture written.
        let video = try #require(manifest.feeds.first { $0.userID == "4" && $0.kind == "video" })
        #expect((video.pausedFrames ?? 0) >= 20, "\(video.pausedFrames ?? 0) pictures dropped while paused")
        let pictures = try await Pictures.runs(out.appendingPathComponent(video.file)).reduce(0) { $0 + $1.count }
        #expect(pictures == video.written && pictures >= 40, "\(pictures) decoded of \(video.written ?? -1) written")
        let (v0, v1) = (try #require(video.firstMediaTime), try #require(video.lastMediaTime))
        let spanned: Double = v1 - v0, playing: Double = Double(pictures) / 10
        #expect(spanned >= playing + 2.3, "the media clock keeps the pause: \(spanned) s for \(pictures) pictures at 10 fps")
    }
}
}
