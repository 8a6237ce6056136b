import Bot
import FrameCrypto
import Foundation
import Testing
import TestSupport

extension MediaScene.DirectReceiveTests {
    /// Janus dies while a stream's first packets wait in its sfbreorder for lip sync (sender
    /// reports dropped: the wait would be the full 2 s). The recorder's `lost()` lets what waits
    /// go before it takes the branches down; no test broke that path before. What arrived before
    /// the kill must be in the files, opened, and the tone back soon after Janus is.
    @Test("direct path: Janus SIGKILLed while the first packets wait for lip sync: they are written, nothing dropped, the tone back ≤ 5 s after Janus")
    func janusKilledWhileTheFirstPacketsWait() async throws {
        let dir = try Scene.tempDirectory("direct-hold-kill")
        try await OwnJanus.with(port: 8199, in: dir, reclaimTimeout: 30, rtpPorts: 12900...12999) { janus in
            let room = try await Scene.createPermanentRoom(janus.url)
            let ring = KeyRing(current: .random())
            let tone = try await Audio.tone(440, seconds: 8, in: dir)
            func config(_ display: String) throws -> BotConfig {
                var c = try Scene.config(room: room, display: display, protection: .e2ee(ring))
                c.janusURL = janus.url
                return c
            }
            let player = Task { try await Player(config: try config("4:Tone"), file: tone.path, loop: true).run() }
            defer { player.cancel() }
            try await Task.sleep(for: .seconds(1))
            let log = CapturedLog()
            var recorderConfig = try config("9:Rec")
            recorderConfig.receivePath = .direct
            recorderConfig.logger = log.logger("rec")
            let out = dir.appendingPathComponent("rec")
            // Nothing throws until the reports are allowed again (the rule would outlive the test).
            try await Faults.dropSenderReports()
            let recording = Task { [recorderConfig] in try await Recorder(config: recorderConfig, directory: out, duration: .seconds(14)).run() }
            let connected = await eventually(within: 20) { log.text.contains("ICE completed") }
            // Half a second into the 2 s wait (the first packets follow ICE by a DTLS handshake).
            try? await Task.sleep(for: .milliseconds(500))
            let killedAt = Date()
            try? await janus.kill9()
            // The comeback waits as any other: only the kill falls inside the wait.
            try await Faults.allowSenderReports()
            try await Task.sleep(for: .seconds(1))
            try await janus.restart()
            let restored = Date()
            let result = await recording.result
            let manifest = try result.get()
            #expect(connected, "the recorder's ICE never came up: \(log.text.suffix(1500))")
            // What had arrived when Janus died: the first connection's audio, in a file, every
            // frame opened.
            let audio = manifest.feeds.filter { $0.kind == "audio" }.sorted { ($0.firstFrame ?? .distantFuture) < ($1.firstFrame ?? .distantFuture) }
            let first = try #require(audio.first, "no audio recorded: \(manifest.feeds) \(manifest.errors)")
            let before = first.firstFrame.map { $0 < killedAt } == true
            #expect(before && (first.written ?? 0) >= 5, "the frames that waited when Janus died: first \(String(describing: first.firstFrame)), killed \(killedAt), written \(first.written ?? -1)")
            #expect(manifest.feeds.allSatisfy { $0.frames.droppedTotal == 0 }, "\(manifest.feeds.map(\.frames))")
            #expect(manifest.reconnection.rejoins >= 1, "a restarted Janus has no session to claim: \(manifest.reconnection)")
            let coverage = try await Gaps.measure(out, userID: "4")
            let resumed = coverage.resumed(atOrAfter: restored)
            let gap = resumed.map { $0.timeIntervalSince(restored) } ?? .infinity
            // The frames that waited decode from their file. (Not placed by the coverage: their
            // `last_frame` is when they were handled, after the kill; noted, not fixed.)
            let waited = try await Audio.decode(out.appendingPathComponent(first.file))
            let seconds = Double(waited.count) / 48000
            // Half a second of tone: zeros after it make the second the frequency is read over.
            let padded = waited + [Int16](repeating: 0, count: max(0, 48000 - waited.count))
            let span = { (f: RecordingManifest.Feed) in "\(f.kind) \(String(format: "%+.2f…%+.2f", f.firstFrame?.timeIntervalSince(killedAt) ?? .nan, f.lastFrame?.timeIntervalSince(killedAt) ?? .nan)) s" }
            print("direct path, Janus killed during the wait: feeds (first…last frame from the kill) \(manifest.feeds.map(span)); \(first.written ?? 0) frames of the first connection written, \(String(format: "%.2f", seconds)) s decoded; tone back \(String(format: "%.2f", gap)) s after Janus; rejoins \(manifest.reconnection.rejoins)")
            #expect(seconds >= Double(first.written ?? 0) * 0.02 * 0.9 && Audio.dominantFrequency(padded).map { abs($0 - 440) <= 440 * 0.02 } == true,
                    "\(seconds) s of the tone decoded from the \(first.written ?? 0) frames that waited")
            #expect(gap <= 5, "the tone was back \(gap) s after Janus")
        }
    }
}
