import Bot
import FrameCrypto
import Foundation
import Testing
import TestSupport

extension MediaScene {
    /// Issue 24, B: a Janus that stops answering for longer than a request timeout, as a
    /// stalled host does (SIGSTOP for 32 s, then SIGCONT). Its sockets stay open: nothing is
    /// refused, every request and WebSocket handshake just waits. On main the recorder said it
    /// was back while Janus was still stopped, failed to subscribe ('attach' not answered in
    /// time) and never tried again: the rest of the call was lost, with `gaps` saying nothing.
    ///
    /// One recorder (in process, 60 s) and one player looping a 440 Hz tone (user 4) on a Janus
    /// of the test's own; the stall begins at 6 s. The recording must have the tone again soon
    /// after Janus is back and until its end, and its manifest a gap where the tone is missing.
    @Suite struct StallTests {
        static let recordFor: Duration = .seconds(60)
        static let stallAt: Duration = .seconds(6)
        static let stall: Duration = .seconds(32)

        @Test("Janus stopped (SIGSTOP) for 32 s: the recording comes back after SIGCONT, its gap in the manifest")
        func janusFrozenFor32Seconds() async throws {
            let dir = try Scene.tempDirectory("stall")
            try await OwnJanus.with(port: 8198, in: dir, reclaimTimeout: 30, rtpPorts: 12600...12699) { janus in
                let room = try await Scene.createPermanentRoom(janus.url)
                let ring = KeyRing(current: .random())
                let tone = try await Audio.tone(440, seconds: 8, in: dir)
                let out = dir.appendingPathComponent("rec")
                func config(_ display: String) throws -> BotConfig {
                    var c = try Scene.config(room: room, display: display, protection: .e2ee(ring))
                    c.janusURL = janus.url
                    return c
                }
                let recorderConfig = try config("9:Recorder"), playerConfig = try config("4:Tone")
                let clock = ContinuousClock(), t0 = clock.now
                let recorder = Task { () -> BotError? in
                    do { _ = try await Recorder(config: recorderConfig, directory: out, duration: Self.recordFor).run() } catch { return BotError(error) }
                    return nil
                }
                try? await Task.sleep(for: .seconds(1))
                let playerDone = DoneFlag()
                let player = Task { () -> String in
                    defer { playerDone.set() }
                    do {
                        _ = try await Player(config: playerConfig, file: tone.path, loop: true).run()
                        return "returned"
                    } catch { return "\(error)" }
                }
                let pid = try Self.janusPID(dir)
                try await Task.sleep(until: t0 + Self.stallAt)
                let stopped = Date()
                kill(pid, SIGSTOP)
                try? await Task.sleep(for: Self.stall)
                kill(pid, SIGCONT)
                let resumed = Date()
                let watchdog = Task {
                    try await Task.sleep(until: t0 + Self.recordFor + .seconds(30))
                    recorder.cancel()
                }
                let recorderError = await recorder.value
                watchdog.cancel()
                let playerEnded = playerDone.isSet
                player.cancel()
                let playerEnd = await player.value
                let manifest = try RecordingManifest.read(from: out)
                let coverage = try await Gaps.measure(out, userID: "4")
                let end = manifest.started.addingTimeInterval(Self.recordFor.inSeconds - MediaScene.FaultTests.tailAllowance)

                let back = coverage.resumed(atOrAfter: resumed)
                let lastSeconds = coverage.covered(from: end.addingTimeInterval(-8), to: end)
                let hole = coverage.holes.max { $0.seconds < $1.seconds }
                let gap = manifest.gaps.max { ($0.seconds ?? 0) < ($1.seconds ?? 0) }
                func at(_ d: Date?) -> String { d.map { String(format: "%+.2f s", $0.timeIntervalSince(stopped)) } ?? "-" }
                print("""
                    stall: Janus stopped \(at(stopped)), resumed \(at(resumed)); tone back \(at(back)), \
                    \(String(format: "%.1f", lastSeconds)) of the last 8 s; longest hole \(hole.map { String(format: "%.2f s", $0.seconds) } ?? "-") \
                    from \(at(hole?.start)) to \(at(hole?.end)); manifest gaps \(manifest.gaps.map { "\(at($0.start))…\(at($0.end)) \($0.cause)" }); \
                    reconnection \(manifest.reconnection); recorder \(recorderError.map { "failed: \($0)" } ?? "returned"); \
                    player \(playerEnded ? "ended: \(playerEnd)" : "still playing")
                    """)
                #expect(recorderError == nil, "the recorder returned normally")
                #expect(!playerEnded, "the player lived through the stall: \(playerEnd)")
                let backAfter = try #require(back, "the tone never came back").timeIntervalSince(resumed)
                #expect(backAfter <= 8, "the tone was back \(backAfter) s after Janus")
                #expect(lastSeconds >= 7, "the tone is in the last seconds: \(lastSeconds) of 8 s")
                let theHole = try #require(hole)
                // Its end may be a hair before SIGCONT: what Janus's sockets held through the stop
                // goes out then, stamped a little earlier (once: the hole's end at +32.00 s, the
                // resume at +32.00 s, lanes).
                #expect(theHole.start.timeIntervalSince(stopped) < 1.5 && theHole.end > resumed.addingTimeInterval(-0.5), "the hole covers the stall: \(theHole)")
                let theGap = try #require(gap, "the manifest has a gap")
                let gapEnd = try #require(theGap.end, "the gap is closed")
                #expect(abs(theGap.start.timeIntervalSince(theHole.start)) <= 1.5, "the gap starts where the tone stopped: \(at(theGap.start)) against \(at(theHole.start))")
                #expect(abs(gapEnd.timeIntervalSince(theHole.end)) <= 1.5, "the gap ends where the tone is back: \(at(gapEnd)) against \(at(theHole.end))")
            }
        }

        /// The pid janusctl wrote for the Janus it started in `dir` (it execs Janus in place).
        static func janusPID(_ dir: URL) throws -> pid_t {
            let text = try String(contentsOf: dir.appendingPathComponent("janus/janus.pid"), encoding: .utf8)
            guard let pid = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)), pid > 1 else {
                throw PipelineRunError(message: "no Janus pid in \(dir.path)/janus/janus.pid: \(text)")
            }
            return pid
        }
    }
}
