import FrameCrypto
import Foundation
import GStreamerKit
import Glibc
import Testing
@testable import Bot
import TestSupport

/// Issue 39, item 3: two MPEG-TS files joined with `cat` (timestamps restart in the middle;
/// the discoverer says their duration is 0) play whole, on time; files holding nothing are
/// still refused at once.
extension MediaScene {
@Suite struct ConcatenatedInputTests {
    let key = String(repeating: "ab", count: 32)

    /// `seconds` of a `frequency` tone (AAC) with a test picture (H.264), as FFmpeg writes a TS.
    static func segment(_ frequency: Int, seconds: Int, to file: URL) async throws {
        let run = try await ChildProcess.run("/usr/bin/ffmpeg", [
            "-hide_banner", "-loglevel", "error", "-y",
            "-f", "lavfi", "-i", "sine=frequency=\(frequency):duration=\(seconds)",
            "-f", "lavfi", "-i", "testsrc=size=320x240:rate=25:duration=\(seconds)",
            "-c:a", "aac", "-c:v", "libx264", "-pix_fmt", "yuv420p", file.path,
        ])
        guard run.status == 0 else { throw PipelineRunError(message: "ffmpeg: \(run.errText)") }
    }

    /// a.ts (440 Hz, 3 s) + b.ts (880 Hz, 3 s), joined as `cat a.ts b.ts > c.ts` joins them.
    static func concatenated(in dir: URL) async throws -> URL {
        let a = dir.appendingPathComponent("a.ts"), b = dir.appendingPathComponent("b.ts")
        try await segment(440, seconds: 3, to: a)
        try await segment(880, seconds: 3, to: b)
        let c = dir.appendingPathComponent("c.ts")
        try (try Data(contentsOf: a) + Data(contentsOf: b)).write(to: c)
        return c
    }

    @Test("the probe takes two TS files concatenated (discoverer duration 0): both streams decode")
    func probeAcceptsConcatenatedTS() async throws {
        let dir = try Scene.tempDirectory("concat-probe")
        let c = try await Self.concatenated(in: dir)
        let info = try MediaInfo.discover(c.path)
        print("discoverer: \(c.lastPathComponent) duration \(info.duration) s")
        let found = try await InputProbe.check(c.path)
        #expect(found.info.hasAudio && found.info.hasVideo)
    }

    @Test("files that hold nothing are still refused at once, exit 66 with the reason: garbage, a TS cut short, an Ogg of headers only")
    func emptyFilesAreStillRefused() async throws {
        let dir = try Scene.tempDirectory("concat-refused")
        let a = dir.appendingPathComponent("a.ts")
        try await Self.segment(440, seconds: 3, to: a)
        let ts = try Data(contentsOf: a)
        // Tables (PAT/PMT) and the start of the first frames; then the first video frame's start.
        let cut = dir.appendingPathComponent("cut.ts"), cutVideo = dir.appendingPathComponent("cut-video.ts")
        try Data(ts.prefix(1500)).write(to: cut)
        try Data(ts.prefix(2256)).write(to: cutVideo)
        let garbage = dir.appendingPathComponent("garbage.ts")
        try Data((0..<65536).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) }).write(to: garbage)
        let ogg = dir.appendingPathComponent("one.opus"), headers = dir.appendingPathComponent("headers.opus")
        try await runToEnd("audiotestsrc num-buffers=50 ! audio/x-raw,rate=48000 ! opusenc ! oggmux ! filesink location=\"\(ogg.path)\"", limit: .seconds(30))
        // OpusHead and OpusTags, each a page of its own, and no audio page.
        let pages = try Data(contentsOf: ogg)
        var end = 0
        for _ in 0..<2 { end += 27 + Int(pages[end + 26]) + pages[(end + 27)..<(end + 27 + Int(pages[end + 26]))].reduce(0) { $0 + Int($1) } }
        try Data(pages.prefix(end)).write(to: headers)
        let cases: [(URL, [String])] = [(cut, ["not a media file"]), (garbage, ["not a media file"]), (headers, ["not a media file"]),
                                        (cutVideo, ["not a media file", "cannot play"])]
        for (file, reasons) in cases {
            let started = ContinuousClock.now
            let child = try CLITests.start(["play", file.path, "--janus", "ws://127.0.0.1:9", "--room", "1234", "--key-hex", key])
            if await child.exit(within: .seconds(20)) == nil { child.signal(SIGKILL) }
            let run = await child.finished()
            let took = ContinuousClock.now - started
            print("refused \(file.lastPathComponent) in \(took): \(run.errText)")
            #expect(run.status == 66, "\(file.lastPathComponent): exit \(run.status): \(run.errText)")
            #expect(took < .seconds(10), "\(file.lastPathComponent): took \(took)")
            #expect(run.errText.contains(file.path) && reasons.contains { run.errText.contains($0) }, "\(file.lastPathComponent): \(run.errText)")
        }
    }

    @Test("two TS files concatenated play whole and on time: 440 Hz then 880 Hz, about 6 s recorded")
    func concatenatedTSIsPlayedWhole() async throws {
        let dir = try Scene.tempDirectory("concat-play")
        let c = try await Self.concatenated(in: dir)
        let ring = KeyRing(current: try CallKey(hex: key))
        let room = try await Scene.createRoom()
        let out = dir.appendingPathComponent("rec")
        let recording = Task { try await Recorder(config: try Scene.config(room: room, display: "9:Rec", protection: .e2ee(ring)), directory: out).run() }
        try await Task.sleep(for: .seconds(1))
        let player = Player(config: try Scene.config(room: room, display: "4:Cat", protection: .e2ee(ring)), source: .file(c.path), duration: .seconds(30))
        let started = ContinuousClock.now
        let report = try await player.run()
        let took = ContinuousClock.now - started
        try await Task.sleep(for: .seconds(1.5))
        recording.cancel()
        let manifest = try await recording.value

        // 6 s of 20 ms frames, paced: the second file is not sent in a burst.
        #expect((285...310).contains(report.framesSent), "frames sent: \(report.framesSent)")
        #expect(took > .seconds(5.5) && took < .seconds(15), "played for \(took)")
        let audio = try #require(manifest.feeds.first { $0.kind == "audio" }, "\(manifest.feeds.map(\.file)) \(manifest.errors)")
        #expect(manifest.errors.isEmpty, "\(manifest.errors)")
        let samples = try await Audio.decode(out.appendingPathComponent(audio.file))
        let seconds = Double(samples.count) / 48000
        #expect(seconds >= 5.2 && seconds <= 6.6, "recorded \(seconds) s of 6 s")
        // Each file's tone fills about its 3 s: 100 ms windows told by their power at each tone.
        let windows = stride(from: 0, to: samples.count - 4800, by: 4800).map { i -> Double? in
            let w = samples[i..<(i + 4800)]
            let (p440, p880) = (Audio.power(w, at: 440), Audio.power(w, at: 880))
            return p440 > 10 * p880 ? 440 : p880 > 10 * p440 ? 880 : nil
        }
        let low = windows.filter { $0 == 440 }.count, high = windows.filter { $0 == 880 }.count
        print("concatenated TS: \(report.framesSent) frames sent in \(took), \(seconds) s recorded, 440 Hz \(low) and 880 Hz \(high) of \(windows.count) windows")
        #expect(low >= 24 && low <= 33, "440 Hz in \(low) windows of 100 ms")
        #expect(high >= 24 && high <= 33, "880 Hz in \(high) windows of 100 ms")
        // In that order: no 440 Hz after the 880 Hz began.
        let firstHigh = windows.firstIndex { $0 == 880 } ?? 0
        let lastLow = windows.lastIndex { $0 == 440 } ?? 0
        #expect(lastLow <= firstHigh + 1, "440 Hz until window \(lastLow), 880 Hz from window \(firstHigh)")
    }
}
}
