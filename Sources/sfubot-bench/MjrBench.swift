// `sfubot mjr decrypt` benchmark: an hour of one A/V publisher (Opus 20 ms frames, H.264
// 10 fps), sealed like ECall and written as Janus's .mjr files by the bot's own writer, then
// decrypted into one Matroska file. Real encoded media (a 10 s tone, 20 s of test pattern,
// looped), so the parsers and muxer do their real work. Target: under 5 s (release).
import Bot
import FrameCrypto
import Foundation
import GStreamerKit
import Mjr
import Logging

enum MjrBench {
    static func run() {
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            do { try await measure() } catch { print("mjr benchmark failed: \(error)") }
            done.signal()
        }
        done.wait()
    }

    static func measure() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sfubot-bench-mjr-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let ogg = dir.appendingPathComponent("tone.ogg"), h264 = dir.appendingPathComponent("pattern.h264")
        try await Pipeline(description: "audiotestsrc num-buffers=500 samplesperbuffer=960 freq=440 ! audio/x-raw,rate=48000,channels=2 ! opusenc bitrate=24000 frame-size=20 ! oggmux ! filesink location=\"\(ogg.path)\"").runToEnd()
        try await Pipeline(description: "videotestsrc num-buffers=200 pattern=ball ! video/x-raw,width=640,height=360,framerate=10/1 ! x264enc speed-preset=ultrafast bitrate=96 key-int-max=20 bframes=0 threads=1 aud=true ! video/x-h264,stream-format=byte-stream,profile=constrained-baseline ! filesink location=\"\(h264.path)\"").runToEnd()
        let key = CallKey.random()
        let opus = oggPackets(try Data(contentsOf: ogg)).dropFirst(2).map { seal(audio: $0, key: key) }
        let aus = accessUnits(try Data(contentsOf: h264)).map { seal(video: $0, key: key) }

        let seconds = 3600
        let start = Date()
        var audio = MjrWriter(kind: .audio, created: start, firstPacket: start)
        for i in 0..<(seconds * 50) { audio.appendAudio(opus[i % opus.count], timestamp: UInt32(truncatingIfNeeded: i * 960), millis: UInt32(i * 20)) }
        var video = MjrWriter(kind: .video, created: start, firstPacket: start)
        for i in 0..<(seconds * 10) { video.appendVideo(aus[i % aus.count], timestamp: UInt32(truncatingIfNeeded: i * 9000), millis: UInt32(i * 100)) }
        let audioFile = dir.appendingPathComponent("bench-audio.mjr"), videoFile = dir.appendingPathComponent("bench-video.mjr")
        try audio.data.write(to: audioFile)
        try video.data.write(to: videoFile)

        var logger = Logger(label: "bench")
        logger.logLevel = .warning
        let clock = ContinuousClock()
        // Opening alone (parse, reorder, depacketize, AES-GCM), then the whole command.
        let openTime = try clock.measure {
            for f in [audioFile, videoFile] { _ = MjrTrack(file: try MjrFile(path: f.path), keys: MjrFixedKey(key), sender: nil) }
        }
        let out = dir.appendingPathComponent("out")
        var manifest: MjrManifest? = nil
        let total = try await clock.measure {
            manifest = try await MjrDecrypt(files: [audioFile.path, videoFile.path], keys: MjrFixedKey(key), directory: out,
                                            library: try PipelineLibrary(), logger: logger).run()
        }
        let output = manifest?.outputs.first
        let opened = output?.tracks.map(\.frames.opened) ?? []
        let size = (try? FileManager.default.attributesOfItem(atPath: out.appendingPathComponent(output?.file ?? "-").path)[.size] as? NSNumber)?.intValue ?? 0
        func s(_ d: Duration) -> String { String(format: "%.2f s", Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18) }
        print("\nsfubot mjr decrypt: one hour of one A/V publisher (\(seconds * 50) Opus frames, \(seconds * 10) H.264 access units)")
        print("  .mjr in: \((audio.data.count + video.data.count) / 1_000_000) MB; \(output?.file ?? "no file") out: \(size / 1_000_000) MB; frames opened \(opened)")
        print("  open (parse + reorder + depacketize + AES-GCM): \(s(openTime))")
        print("  whole command (+ h264parse/opusparse + matroskamux + write): \(s(total))  (target < 5 s)")
        precondition(opened.reduce(0, +) == seconds * 60, "every benchmark frame must open")
    }

    static func seal(audio frame: [UInt8], key: CallKey) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: frame.count + AudioFrame.overhead)
        let n = frame.withUnsafeBytes { p in out.withUnsafeMutableBytes { o in try! AudioFrame.seal(p, key: key, into: o) } }
        return Array(out[..<n])
    }

    static func seal(video au: [UInt8], key: CallKey) -> [UInt8] {
        let capacity = au.withUnsafeBytes { VideoFrame.sealedCapacity($0)! }
        var out = [UInt8](repeating: 0, count: capacity)
        let n = au.withUnsafeBytes { p in out.withUnsafeMutableBytes { o in try! VideoFrame.seal(p, key: key, into: o) } }
        return Array(out[..<n])
    }

    /// The packets of an Ogg stream (one logical stream), joined across lacing.
    static func oggPackets(_ d: Data) -> [[UInt8]] {
        let b = [UInt8](d)
        var packets: [[UInt8]] = [], current: [UInt8] = []
        var i = 0
        while i + 27 <= b.count, b[i] == 0x4F, b[i + 1] == 0x67 {
            let segments = Int(b[i + 26])
            var at = i + 27 + segments
            for s in 0..<segments {
                let lace = Int(b[i + 27 + s])
                current += b[at..<(at + lace)]
                at += lace
                if lace < 255 { packets.append(current); current = [] }
            }
            i = at
        }
        return packets
    }

    /// Annex-B → length-prefixed access units, split at each access unit delimiter (x264 `aud=true`).
    static func accessUnits(_ d: Data) -> [[UInt8]] {
        let b = [UInt8](d)
        var starts: [Int] = []  // first byte of each NAL unit
        var i = 0
        while i + 3 <= b.count {
            if b[i] == 0, b[i + 1] == 0, b[i + 2] == 1 { starts.append(i + 3); i += 3 } else { i += 1 }
        }
        var aus: [[UInt8]] = [], au: [UInt8] = []
        for (k, s) in starts.enumerated() {
            var end = k + 1 < starts.count ? starts[k + 1] - 3 : b.count
            while end > s, b[end - 1] == 0 { end -= 1 }  // a 4-byte start code's leading zero
            let nal = b[s..<end]
            if nal.first! & 0x1F == 9 {
                if !au.isEmpty { aus.append(au) }
                au = []
                continue
            }
            au += [UInt8(nal.count >> 24), UInt8(nal.count >> 16 & 0xFF), UInt8(nal.count >> 8 & 0xFF), UInt8(nal.count & 0xFF)] + nal
        }
        if !au.isEmpty { aus.append(au) }
        return aus
    }
}
