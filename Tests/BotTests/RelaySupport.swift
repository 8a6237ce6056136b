import Foundation
import GStreamerKit
import Testing
import TestSupport

/// What the relay tests share: the publisher's file, the processes, and reading back what a
/// destination got with ffmpeg/ffprobe.
enum RelayCase {
    static let key = String(repeating: "5a", count: 32)
    static let otherKey = String(repeating: "a5", count: 32)

    /// `seconds` of a test pattern (640x360, 15 fps, H.264 constrained baseline, an IDR every 2 s)
    /// and a 440 Hz tone (Opus): `play` sends the H.264 as it is, so the relay's output must
    /// hold this file's very SPS and PPS.
    static func source(in dir: URL, seconds: Int = 20) async throws -> URL {
        let file = dir.appendingPathComponent("source.mkv")
        try await runToEnd("""
            matroskamux name=m ! filesink location="\(file.path)"
            videotestsrc num-buffers=\(seconds * 15) pattern=smpte ! video/x-raw,width=640,height=360,framerate=15/1 ! videoconvert
              ! x264enc tune=zerolatency speed-preset=ultrafast bitrate=300 key-int-max=30 bframes=0 threads=1 sliced-threads=false
              ! video/x-h264,profile=constrained-baseline ! h264parse ! m.
            audiotestsrc num-buffers=\(seconds * 50) samplesperbuffer=960 freq=440 volume=0.5 ! audio/x-raw,rate=48000,channels=2 ! opusenc ! m.
            """)
        return file
    }

    /// `sfubot play FILE` as user 7, sealed with `key`.
    static func publisher(_ file: URL, room: Int64) throws -> ChildProcess {
        try SfubotProcess.start(["play", file.path, "--janus", Scene.janusURL!, "--room", "\(room)", "--key-hex", key, "--display", "7:Publisher"])
    }

    /// `sfubot relay` of user 7 to `to` for `seconds`.
    static func relay(to: String, room: Int64, seconds: Int, key: String = key) throws -> ChildProcess {
        try SfubotProcess.start(["relay", "--janus", Scene.janusURL!, "--room", "\(room)", "--key-hex", key, "--participant", "7",
                                 "--to", to, "--duration", "\(seconds)"])
    }

    /// ffmpeg reading `url` for `seconds` into `file` (copied, not decoded), tried again until
    /// it got something (a server that has no stream yet refuses or ends at once).
    static func readBack(_ url: String, seconds: Int, to file: URL, within limit: Double = 40) async -> Bool {
        await eventually(within: limit) {
            let r = try? await ChildProcess.run("/usr/bin/timeout", ["-s", "KILL", "\(seconds + 20)", "/usr/bin/ffmpeg", "-hide_banner", "-loglevel", "error", "-y",
                                                                  "-i", url, "-t", "\(seconds)", "-c", "copy", file.path])
            let size = (try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int) ?? 0
            if r?.status != 0 || size < 10_000 { try? await Task.sleep(for: .milliseconds(500)) }
            return r?.status == 0 && size >= 10_000
        }
    }

    struct Streams {
        var video: (codec: String, width: Int, height: Int)?
        var audio: (codec: String, rate: Int)?
        var duration: Double
    }

    static func probe(_ file: URL) async throws -> Streams {
        let r = try await ChildProcess.run("/usr/bin/ffprobe", ["-hide_banner", "-loglevel", "error", "-show_entries",
                                                                "stream=codec_type,codec_name,width,height,sample_rate:format=duration", "-of", "compact=p=0:nk=0", file.path])
        var s = Streams(duration: 0)
        for line in r.outText.split(whereSeparator: \.isNewline) {
            var f: [String: String] = [:]
            for field in line.split(separator: "|") {
                let kv = field.split(separator: "=", maxSplits: 1)
                if kv.count == 2 { f[String(kv[0])] = String(kv[1]) }
            }
            if f["codec_type"] == "video" { s.video = (f["codec_name"] ?? "", Int(f["width"] ?? "") ?? 0, Int(f["height"] ?? "") ?? 0) }
            if f["codec_type"] == "audio" { s.audio = (f["codec_name"] ?? "", Int(f["sample_rate"] ?? "") ?? 0) }
            if let d = f["duration"].flatMap(Double.init) { s.duration = d }
        }
        return s
    }

    /// The distinct SPS and PPS NAL units (hex) in `file`'s video, and how many IDR pictures.
    static func parameterSets(_ file: URL) async throws -> (sps: Set<String>, pps: Set<String>, idr: Int) {
        let raw = file.deletingPathExtension().appendingPathExtension("h264")
        let r = try await ChildProcess.run("/usr/bin/ffmpeg", ["-hide_banner", "-loglevel", "error", "-y", "-i", file.path, "-map", "0:v",
                                                               "-c", "copy", "-bsf:v", "h264_mp4toannexb", "-f", "h264", raw.path])
        guard r.status == 0 else { throw PipelineRunError(message: "ffmpeg could not extract the video of \(file.lastPathComponent): \(r.errText)") }
        let bytes = [UInt8](try Data(contentsOf: raw))
        var starts: [Int] = [], i = 0
        while i + 3 <= bytes.count {
            if bytes[i] == 0, bytes[i + 1] == 0, bytes[i + 2] == 1 { starts.append(i + 3); i += 3 } else { i += 1 }
        }
        var sps = Set<String>(), pps = Set<String>(), idr = 0
        for (k, s) in starts.enumerated() where s < bytes.count {
            var e = k + 1 < starts.count ? starts[k + 1] - 3 : bytes.count
            while e > s, bytes[e - 1] == 0 { e -= 1 }
            let nal = bytes[s..<e], hex = nal.map { String(format: "%02x", $0) }.joined()
            switch nal.first.map({ $0 & 0x1f }) {
            case 7: sps.insert(hex)
            case 8: pps.insert(hex)
            case 5: idr += 1
            default: break
            }
        }
        return (sps, pps, idr)
    }

    /// `file`'s audio decoded by ffmpeg to 48 kHz mono.
    static func audioSamples(_ file: URL) async throws -> [Int16] {
        let raw = file.deletingPathExtension().appendingPathExtension("pcm")
        let r = try await ChildProcess.run("/usr/bin/ffmpeg", ["-hide_banner", "-loglevel", "error", "-y", "-i", file.path, "-map", "0:a",
                                                               "-ac", "1", "-ar", "48000", "-f", "s16le", raw.path])
        guard r.status == 0 else { throw PipelineRunError(message: "ffmpeg could not decode the audio of \(file.lastPathComponent): \(r.errText)") }
        return try Data(contentsOf: raw).withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
    }

    /// The relay's last lines: its counters, as `sfubot relay` prints them.
    static func counters(_ out: String) -> (relayedAudio: Int, relayedVideo: Int, dropped: Int, failures: Int, outputs: Int) {
        let relayed = out.split(whereSeparator: \.isNewline).first { $0.hasPrefix("relayed to ") }.map(String.init) ?? ""
        func number(after label: String) -> Int {
            guard let r = relayed.range(of: label) else { return -1 }
            return Int(relayed[r.upperBound...].prefix { $0.isNumber }) ?? -1
        }
        let dropped = out.split(whereSeparator: \.isNewline).filter { $0.hasPrefix("audio frames received") || $0.hasPrefix("video frames received") }
            .map { line -> Int in
                guard let r = line.range(of: "dropped: ") else { return 0 }
                return Int(line[r.upperBound...].prefix { $0.isNumber }) ?? 0
            }.reduce(0, +)
        return (number(after: "audio frames "), number(after: "video frames "), dropped,
                number(after: "destination failures: "), number(after: "outputs started: "))
    }

    /// The relay's `output delay …` line: p50 and p95 in ms and the buffers measured; nil if
    /// it printed none. Printed by the tests that read it: a figure, not a bound.
    static func outputDelay(_ out: String) -> (p50: Int, p95: Int, buffers: Int)? {
        guard let line = out.split(whereSeparator: \.isNewline).first(where: { $0.hasPrefix("output delay") }),
              let m = String(line).firstMatch(of: /p50 (\d+) ms, p95 (\d+) ms over (\d+) buffers/),
              let p50 = Int(m.1), let p95 = Int(m.2), let buffers = Int(m.3) else { return nil }
        return (p50, p95, buffers)
    }
}
