import Foundation
import Testing
@testable import Bot
import TestSupport

/// The composite relay's pure parts: the grid's tiles, the active speaker's hysteresis (with
/// the time given, no I/O), `--size`, and the command line's refusals (the built sfubot, no
/// Janus: refused before joining).
@Suite struct CompositeLayoutTests {
    let format = CompositeFormat()

    @Test("grid: one tile is the whole frame; two side by side; three as two and one centred; every tile inside the frame, none overlapping")
    func gridTiles() {
        #expect(format.grid(0).isEmpty)
        #expect(format.grid(1) == [Tile(x: 0, y: 0, width: 1280, height: 720)])
        #expect(format.grid(2) == [Tile(x: 0, y: 0, width: 640, height: 720), Tile(x: 640, y: 0, width: 640, height: 720)])
        #expect(format.grid(3) == [Tile(x: 0, y: 0, width: 640, height: 360), Tile(x: 640, y: 0, width: 640, height: 360),
                                   Tile(x: 320, y: 360, width: 640, height: 360)])
        for n in 1...25 {
            let tiles = format.grid(n)
            #expect(tiles.count == n)
            #expect(tiles.allSatisfy { $0.x >= 0 && $0.y >= 0 && $0.x + $0.width <= 1280 && $0.y + $0.height <= 720 && $0.width % 2 == 0 }, "\(n)")
            for (i, a) in tiles.enumerated() {
                for b in tiles[(i + 1)...] {
                    #expect(a.x + a.width <= b.x || b.x + b.width <= a.x || a.y + a.height <= b.y || b.y + b.height <= a.y, "\(n): \(a) \(b)")
                }
            }
        }
    }

    @Test func sizeOption() throws {
        #expect(try CompositeFormat(size: "960x540") == CompositeFormat(width: 960, height: 540))
        for bad in ["", "1280", "1280x", "x720", "1281x720", "1280x721", "4096x2160", "100x100", "axb"] {
            #expect(throws: BotError.self, "\(bad)") { try CompositeFormat(size: bad) }
        }
        #expect(CompositeFormat().kbps == 2304 && CompositeFormat().keyInterval == 50)
    }

    /// 20 ms frames of `slot` at `power` from `from` for `seconds`; returns the speaker after each.
    func speak(_ s: inout ActiveSpeaker, _ slot: Int, power: Double, from t0: ContinuousClock.Instant, seconds: Double,
               with other: (Int, Double)? = nil) -> [Int?] {
        (0..<Int(seconds * 50)).map { i in
            let t = t0 + .milliseconds(20 * i)
            _ = s.heard(slot, power: power, at: t)
            if let (o, p) = other { _ = s.heard(o, power: p, at: t) }
            return s.current
        }
    }

    @Test("the active speaker: the first to speak at once; another only after being louder for 1 s; talking over each other does not flap; the speaker leaving hands over at once")
    func activeSpeakerHysteresis() {
        var s = ActiveSpeaker()
        let t0 = ContinuousClock.now
        let (loud, quiet, silent) = (0.05, 0.0005, 0.0)
        #expect(s.current == nil)
        let silence = speak(&s, 1, power: silent, from: t0, seconds: 1)
        #expect(silence.allSatisfy { $0 == nil }, "silence makes no speaker")
        let firstVoice = speak(&s, 1, power: quiet, from: t0 + .seconds(1), seconds: 0.2)
        #expect(firstVoice.first == 1, "the first voice takes the frame at once")
        // 2 louder for 0.6 s: not enough.
        let short = speak(&s, 2, power: loud, from: t0 + .seconds(2), seconds: 0.6, with: (1, quiet))
        #expect(short.allSatisfy { $0 == 1 })
        // 1 back louder, then 2 louder for 1.5 s: 2 takes over once, about 1 s in.
        _ = speak(&s, 1, power: loud, from: t0 + .seconds(3), seconds: 0.5, with: (2, quiet))
        let takeover = speak(&s, 2, power: loud, from: t0 + .seconds(4), seconds: 1.5, with: (1, quiet))
        let first = takeover.firstIndex(of: 2)
        #expect(first.map { (45...70).contains($0) } == true, "took over after \(first.map { $0 * 20 } ?? -1) ms")
        #expect(takeover.last == 2)
        // Alternating every 300 ms at the same level: whoever has the frame keeps it.
        var alternating: [Int?] = []
        for k in 0..<10 {
            let t = t0 + .seconds(6) + .milliseconds(300 * k)
            alternating += speak(&s, k % 2 == 0 ? 1 : 2, power: loud, from: t, seconds: 0.3, with: (k % 2 == 0 ? 2 : 1, quiet))
        }
        #expect(alternating.allSatisfy { $0 == 2 }, "no flapping: \(Set(alternating.map { $0 ?? 0 }))")
        // The speaker leaves: the other (still speaking) has the frame at once; the last leaves: nobody.
        _ = speak(&s, 1, power: loud, from: t0 + .seconds(10), seconds: 0.2, with: (2, loud))
        let end = t0 + .seconds(10.2)
        let speakerLeft = s.removed(2, at: end), afterSpeaker = s.current
        let otherLeft = s.removed(7, at: end)
        let lastLeft = s.removed(1, at: end), afterLast = s.current
        #expect(speakerLeft && afterSpeaker == 1)
        #expect(!otherLeft)
        #expect(lastLeft && afterLast == nil)
    }

    @Test func powerOfS16() {
        let full = [Int16](repeating: .max, count: 960) + [Int16](repeating: .min, count: 960)
        let p = full.withUnsafeBytes { ActiveSpeaker.power(ofS16: $0) }
        #expect(abs(p - 1) < 0.001)
        #expect([Int16](repeating: 0, count: 10).withUnsafeBytes { ActiveSpeaker.power(ofS16: $0) } == 0)
    }

    @Test("relay refuses --layout/--size with --participant, with rtp/srtp/ws, --from and --to-room, bad values, and rtp without --participant")
    func cliRefusals() async throws {
        let base = ["relay", "--no-e2ee", "--room", "1", "--janus", "ws://127.0.0.1:1"]
        let cases: [([String], String)] = [
            (["--to", "rtmp://127.0.0.1/live/x", "--participant", "7", "--layout", "grid"], "--layout composes the whole room"),
            (["--to", "rtmp://127.0.0.1/live/x", "--participant", "7", "--size", "640x360"], "--size composes the whole room"),
            (["--to", "rtp://127.0.0.1:5004", "--layout", "speaker"], "--layout goes with --to rtmp://"),
            (["--to", "ws://127.0.0.1:9/{participant}", "--layout", "grid"], "--layout goes with --to rtmp://"),
            (["--from", "rtmp://127.0.0.1/live/k", "--layout", "grid"], "--layout goes with --to rtmp://"),
            (["--to", "srt://127.0.0.1:9000", "--layout", "mosaic"], "--layout: give grid or speaker"),
            (["--to", "hls:/tmp/sfubot-never", "--size", "1281x720"], "--size 1281x720: give even numbers"),
            (["--to", "rtp://127.0.0.1:5004"], "give --participant"),
            (["--to", "srtp://127.0.0.1:5004?key=\(Data(count: 30).base64EncodedString())"], "give --participant"),
        ]
        for (args, why) in cases {
            let r = try await SfubotProcess.run(base + args)
            #expect(r.status == 64 && r.err.contains(why), "\(args): \(r.status) \(r.err)")
        }
    }
}
