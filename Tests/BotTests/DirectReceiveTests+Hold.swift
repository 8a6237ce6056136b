import Bot
import FrameCrypto
import Foundation
import Locking
import Synchronization
import Testing
import TestSupport

extension MediaScene.DirectReceiveTests {
    /// On the direct path a stream's first packets wait in its sfbreorder until rtpbin can sync
    /// it (a sender report), 2 s at most, and its webrtcbin pad only appears when they go out.
    /// A recording stopped within that wait lost them: no pad, no branch, the publisher "never
    /// reached". With every sender report dropped the wait is the full 2 s; the stop comes
    /// 0.9 s after the recorder's ICE completed, inside it. What arrived is in the files.
    @Test("direct path: a recording stopped while the first packets wait for lip sync (sender reports dropped: they would wait 2 s) writes them: audio and video, every frame opened on disk")
    func stoppedWhileTheFirstPacketsWait() async throws {
        let dir = try Scene.tempDirectory("direct-hold-stop")
        let room = try await Scene.createRoom()
        let ring = KeyRing(current: .random())
        let playerConfig = try Scene.config(room: room, display: "3:Sender", protection: .e2ee(ring))
        let player = Task { try await Player(config: playerConfig, source: .testPattern, duration: .seconds(20)).run() }
        defer { player.cancel() }
        try await Task.sleep(for: .seconds(2))
        let log = CapturedLog()
        var config = try Scene.config(room: room, display: "9:Rec", protection: .e2ee(ring))
        config.receivePath = .direct
        config.logger = log.logger("rec")
        let firstOpened = Locked<Date?>(nil)
        config.frameTap = { point, _, _ in if point == .afterOpen { firstOpened.withLock { $0 = $0 ?? Date() } } }
        let out = dir.appendingPathComponent("rec")
        // Nothing throws until the reports are allowed again (the rule would outlive the test).
        try await Faults.dropSenderReports()
        let recording = Task { [config] in try await Recorder(config: config, directory: out).run() }
        // Media follows ICE by a DTLS handshake (tens of ms here); the pair's log line can come
        // seconds later (webrtcbin's stats), too late to stop inside the wait.
        let connected = await eventually(within: 20) { log.text.contains("ICE completed") }
        try? await Task.sleep(for: .milliseconds(900))
        let stoppedAt = Date()
        recording.cancel()
        let result = await recording.result
        try await Faults.allowSenderReports()
        let manifest = try result.get()
        #expect(connected, "the recorder's ICE never came up: \(log.text.suffix(1500))")
        let audio = try #require(manifest.feeds.first { $0.kind == "audio" }, "nothing recorded: \(manifest.feeds) \(manifest.errors)")
        let video = try #require(manifest.feeds.first { $0.kind == "video" }, "no video: \(manifest.feeds.map(\.kind))")
        // The stop came while they waited: frames that arrived before it were first opened
        // after it. The manifest's first frame is the arrival, not the end of the wait.
        let opened = firstOpened.withLock { $0 }
        #expect(opened.map { $0 >= stoppedAt } == true, "first opened \(String(describing: opened)), stopped at \(stoppedAt)")
        #expect(audio.firstFrame.map { $0 < stoppedAt } == true, "first frame \(String(describing: audio.firstFrame)), stopped at \(stoppedAt)")
        #expect(audio.frames.opened >= 10 && audio.frames.droppedTotal == 0 && audio.written == audio.frames.opened, "\(audio.frames) written \(audio.written ?? -1)")
        #expect(video.frames.droppedTotal == 0 && (video.written ?? 0) > 0, "\(video.frames) written \(video.written ?? -1)")
        let file = out.appendingPathComponent(audio.file)
        let seconds = Double(try await Audio.decode(file).count) / 48000
        #expect(seconds >= Double(audio.frames.opened) * 0.02 * 0.9, "\(seconds) s decoded of \(audio.frames.opened) frames")
        print("direct path stopped during the hold: \(audio.frames.opened) audio and \(video.written ?? 0) video frames written after the stop, \(String(format: "%.2f", seconds)) s of audio")
    }

    /// A sender that stops within the wait (hung, or muted without leaving: Janus still lists it)
    /// sends no next packet to release what waits; its frames went to the file only at the
    /// recording's end (SilentPublishersTests, on a loaded machine: nothing of a publisher that
    /// joined late). The wait's end is on the clock now: sender reports dropped, so 2 s from the
    /// first packet, the held frames are opened while the recording runs and the sender is paused.
    @Test("direct path: a sender that stops inside the wait for lip sync has its first frames written when the wait ends, not at the recording's end")
    func senderThatStopsInsideTheWait() async throws {
        let dir = try Scene.tempDirectory("direct-hold-quiet")
        let room = try await Scene.createRoom()
        let ring = KeyRing(current: .random())
        let opened = Locked<[Date]>([])
        var config = try Scene.config(room: room, display: "9:Rec", protection: .e2ee(ring))
        config.receivePath = .direct
        config.frameTap = { point, _, _ in if point == .afterOpen { opened.withLock { $0.append(Date()) } } }
        let log = CapturedLog()
        config.logger = log.logger("rec")
        let out = dir.appendingPathComponent("rec")
        try await Faults.dropSenderReports()
        let recording = Task { [config] in try await Recorder(config: config, directory: out).run() }
        try? await Task.sleep(for: .seconds(1))
        let tone = try await Audio.tone(440, seconds: 20, in: dir)
        let player = Player(config: try Scene.config(room: room, display: "3:Quiet", protection: .e2ee(ring)), source: .file(tone.path), duration: .seconds(30))
        let playing = Task { try await player.run() }
        // Paused half a second after the recorder's path is up (its first packets a DTLS
        // handshake later): inside the 2 s wait, and nothing more comes.
        let connected = await eventually(within: 20) { log.text.contains("ICE completed") }
        try? await Task.sleep(for: .milliseconds(500))
        _ = player.pauses.pause()
        let pausedAt = Date()
        let written = await eventually(within: 6) { opened.withLock { $0.count } >= 10 }
        let seen = opened.withLock { $0 }
        recording.cancel()
        playing.cancel()
        let result = await recording.result
        try await Faults.allowSenderReports()
        _ = try result.get()
        #expect(connected, "the recorder's ICE never came up: \(log.text.suffix(1500))")
        let after = seen.first.map { String(format: "%.2f", $0.timeIntervalSince(pausedAt)) } ?? "never"
        print("direct path, sender paused inside the wait: \(seen.count) frames opened while the recording ran, the first \(after) s after the pause")
        #expect(written, "\(seen.count) frames opened in the 6 s after the sender paused; the first \(after) s after it")
    }
}
