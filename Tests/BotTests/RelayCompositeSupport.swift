import Foundation
import Testing
import TestSupport

/// What the composite relay's tests share: publishers with a picture of one colour and a tone
/// of their own, the pictures of what came back sampled as RGB, and the relay's CPU.
enum CompositeCase {
    /// `seconds` of one colour (videotestsrc's `pattern`: red, blue…; 640x360, 15 fps, H.264
    /// constrained baseline, an IDR every 2 s) and a `frequency` tone (Opus) sounding from
    /// `toneFrom` to `toneTo` seconds, silence elsewhere.
    static func publisherFile(_ pattern: String, tone frequency: Double, from toneFrom: Double = 0, to toneTo: Double? = nil,
                              seconds: Int, in dir: URL) async throws -> URL {
        let end = toneTo ?? Double(seconds)
        let samples = (0..<(seconds * 48000)).map { i -> Int16 in
            let t = Double(i) / 48000
            return t >= toneFrom && t < end ? Int16(12000 * sin(2 * .pi * frequency * t)) : 0
        }
        let wav = dir.appendingPathComponent("\(pattern).wav"), file = dir.appendingPathComponent("\(pattern).mkv")
        try FaultGapTests.wavData(samples).write(to: wav)
        try await runToEnd("""
            matroskamux name=m ! filesink location="\(file.path)"
            videotestsrc num-buffers=\(seconds * 15) pattern=\(pattern) ! video/x-raw,width=640,height=360,framerate=15/1 ! videoconvert
              ! x264enc tune=zerolatency speed-preset=ultrafast bitrate=300 key-int-max=30 bframes=0 threads=1 sliced-threads=false
              ! video/x-h264,profile=constrained-baseline ! h264parse ! m.
            filesrc location="\(wav.path)" ! wavparse ! audioconvert ! audioresample ! audio/x-raw,rate=48000,channels=2 ! opusenc ! m.
            """)
        return file
    }

    static func play(_ file: URL, as display: String, room: Int64) throws -> ChildProcess {
        try SfubotProcess.start(["play", file.path, "--janus", Scene.janusURL!, "--room", "\(room)", "--key-hex", RelayCase.key, "--display", display])
    }

    /// `sfubot relay` of the whole room (no `--participant`) to `to`.
    static func relay(to: String, room: Int64, seconds: Int, key: String = RelayCase.key, _ more: [String] = []) throws -> ChildProcess {
        try SfubotProcess.start(["relay", "--janus", Scene.janusURL!, "--room", "\(room)", "--key-hex", key, "--to", to, "--duration", "\(seconds)"] + more)
    }

    /// What a decoded picture shows at a few places, by colour.
    struct Picture {
        var at: Double
        var left: Colour
        var right: Colour
        var centre: Colour
    }

    enum Colour: String { case red, blue, black, other }

    static func colour(_ r: UInt8, _ g: UInt8, _ b: UInt8) -> Colour {
        switch (Int(r), Int(g), Int(b)) {
        case (200..., ..<80, ..<80): .red
        case (..<80, ..<80, 200...): .blue
        case (..<40, ..<40, ..<40): .black
        default: .other
        }
    }

    /// Every `step` seconds of `file`'s video, decoded by ffmpeg to RGB at 1280x720: the colour
    /// at the middle of the left half, of the right half, and at the centre.
    static func pictures(_ file: URL, step: Double = 0.5) async throws -> [Picture] {
        let raw = file.deletingPathExtension().appendingPathExtension("rgb")
        let r = try await ChildProcess.run("/usr/bin/ffmpeg", ["-hide_banner", "-loglevel", "error", "-y", "-i", file.path, "-map", "0:v",
                                                               "-vf", "fps=\(1 / step),scale=1280:720", "-f", "rawvideo", "-pix_fmt", "rgb24", raw.path])
        guard r.status == 0 else { throw PipelineRunError(message: "ffmpeg could not decode the pictures of \(file.lastPathComponent): \(r.errText)") }
        let bytes = [UInt8](try Data(contentsOf: raw)), size = 1280 * 720 * 3
        return stride(from: 0, to: bytes.count - size + 1, by: size).enumerated().map { n, base in
            func at(_ x: Int, _ y: Int) -> Colour {
                let i = base + (y * 1280 + x) * 3
                return colour(bytes[i], bytes[i + 1], bytes[i + 2])
            }
            return Picture(at: Double(n) * step, left: at(320, 360), right: at(960, 360), centre: at(640, 360))
        }
    }

    /// Which of the tones sound in each second of `samples` (48 kHz mono): a tone counts when it
    /// holds a good share of that second's energy.
    static func tones(_ samples: [Int16], _ frequencies: [Double]) -> [[Double]] {
        stride(from: 0, to: samples.count - 48000 + 1, by: 48000).map { start in
            let second = samples[start..<(start + 48000)]
            let energy = second.reduce(0.0) { $0 + Double($1) * Double($1) }
            guard energy > 0 else { return [] }
            return frequencies.filter { Audio.power(second, at: $0) * 2 / 48000 / energy > 0.1 }
        }
    }

    /// CPU seconds (user + system) `pid` has used so far, from /proc/PID/stat.
    static func cpuSeconds(_ pid: Int32) -> Double? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        // Fields after the command's closing parenthesis: state is field 3; utime, stime are 14, 15.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}
