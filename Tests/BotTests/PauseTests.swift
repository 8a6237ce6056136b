import Bot
import FrameCrypto
import Foundation
import Testing
import TestSupport

/// Issue 27, part 5: a paused recording writes nothing of the call; its files go on after
/// resume, one per participant, with a media-time gap, video from a keyframe.
extension MediaScene {
@Suite struct PauseTests {
    /// The longest run of consecutive quiet 100 ms windows: where and how long.
    static func longestQuiet(_ windows: [Double]) -> (start: Double, seconds: Double) {
        var best = (start: 0.0, seconds: 0.0), start = -1.0, previous = -1.0
        for w in windows {
            if w - previous > 0.15 { start = w }
            previous = w
            let length = w - start + 0.1
            if length > best.seconds { best = (start, length) }
        }
        return best
    }

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
        let (quietAt, span) = Self.longestQuiet(Audio.quietWindows(timed))
        #expect((2.3...3.9).contains(span), "the longest silence: \(span) s from \(quietAt) s")
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

    @Test("a playback paused for 3 s goes on from where it stopped: the whole file is sent, once, with the pause in between")
    func playbackPausesAndResumesWhereItStopped() async throws {
        let dir = try Scene.tempDirectory("pause-play")
        let tone = try await Audio.tone(440, seconds: 6, in: dir)
        let ring = KeyRing(current: .random())
        let room = try await Scene.createRoom()
        let out = dir.appendingPathComponent("rec")
        let recording = Task { try await Recorder(config: try Scene.config(room: room, display: "9:Rec", protection: .e2ee(ring)), directory: out).run() }
        try await Task.sleep(for: .seconds(1))
        let player = Player(config: try Scene.config(room: room, display: "3:Tone", protection: .e2ee(ring)), source: .file(tone.path), duration: .seconds(30))
        let started = ContinuousClock.now
        let playing = Task { try await player.run() }
        #expect(await eventually(within: 10) { player.stats.snapshot.sealed >= 100 })
        #expect(player.pauses.pause())
        let sealedAtPause = player.stats.snapshot.sealed
        try await Task.sleep(for: .seconds(3))
        let sealedInPause = player.stats.snapshot.sealed - sealedAtPause
        #expect(player.pauses.resume())
        let report = try await playing.value
        let took = ContinuousClock.now - started
        try await Task.sleep(for: .seconds(1))
        recording.cancel()
        let manifest = try await recording.value

        // At most the frames already past the hold go out after the pause began.
        #expect(sealedInPause <= 5, "\(sealedInPause) frames sealed while paused")
        #expect((295...305).contains(report.framesSent), "6 s of 20 ms frames, each once: \(report.framesSent)")
        #expect(took >= .seconds(8.5), "6 s of file and 3 s of pause took \(took)")
        #expect(player.pauses.all.count == 1 && player.pauses.all[0].end != nil)
        // The room heard the file to its end with a ~3 s silence in the middle.
        let feed = try #require(manifest.feeds.first { $0.userID == "3" })
        let timed = try await Audio.decodeTimed(out.appendingPathComponent(feed.file))
        let (quietAt, span) = Self.longestQuiet(Audio.quietWindows(timed))
        #expect((2.3...3.9).contains(span), "the longest silence: \(span) s from \(quietAt) s")
        let heard = Double(timed.count) / 48000 - span
        #expect(heard >= 5.4, "\(heard) s of the 6 s file heard")
    }
}
}
