public import Foundation

/// A recording's pictures as an independent player decodes them: Debian's ffprobe (FFmpeg),
/// not GStreamer, so a file that only GStreamer reads fails here.
public enum Pictures {
    /// One run of pictures of one size, in decode order.
    public struct Run: Sendable, Equatable, CustomStringConvertible {
        public var width: Int
        public var height: Int
        public var count: Int
        public var description: String { "\(count)×\(width)x\(height)" }
        public init(width: Int, height: Int, count: Int) {
            self.width = width
            self.height = height
            self.count = count
        }
    }

    /// The video pictures of `file` decoded by ffprobe, grouped into runs of one size.
    public static func runs(_ file: URL) async throws -> [Run] {
        let run = try await ChildProcess.run("/usr/bin/ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries",
                                                                  "frame=width,height", "-of", "compact=p=0:nk=0", file.path])
        guard run.status == 0 else { throw ProbeFailed(file: file.lastPathComponent, text: run.errText) }
        var runs: [Run] = []
        for line in run.outText.split(separator: "\n") {
            // `width=640|height=360`, side data after a second `|` on some lines.
            let fields = Dictionary(line.split(separator: "|").compactMap { f -> (String, Int)? in
                let kv = f.split(separator: "=", maxSplits: 1)
                return kv.count == 2 ? (String(kv[0]), Int(kv[1]) ?? 0) : nil
            }, uniquingKeysWith: { a, _ in a })
            guard let w = fields["width"], let h = fields["height"], w > 0, h > 0 else { continue }
            if runs.last?.width == w, runs.last?.height == h { runs[runs.count - 1].count += 1 } else { runs.append(Run(width: w, height: h, count: 1)) }
        }
        return runs
    }

    /// Pictures GStreamer's `playbin` (what GStreamer players use) presents when it plays `file`
    /// to its end, with the audio going to a fake sink.
    public static func playedByPlaybin(_ file: URL) async throws -> Int {
        let raw = file.deletingPathExtension().appendingPathExtension("playbin.gray")
        try await runToEnd("""
            playbin uri="\(file.absoluteString)" audio-sink="fakesink sync=false" \
            video-sink="videoconvert ! videoscale ! video/x-raw,format=GRAY8,width=16,height=16 ! filesink location=\(raw.path)"
            """)
        return (try Data(contentsOf: raw)).count / 256
    }

    /// The container's duration as ffprobe reads it, in seconds.
    public static func duration(_ file: URL) async throws -> Double {
        let run = try await ChildProcess.run("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", file.path])
        guard run.status == 0, let d = Double(run.outText.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw ProbeFailed(file: file.lastPathComponent, text: run.errText + run.outText)
        }
        return d
    }

    public struct ProbeFailed: Error, CustomStringConvertible {
        public var file: String
        public var text: String
        public var description: String { "ffprobe cannot read \(file): \(text)" }
    }
}
