import Bot
public import Foundation
import GStreamerKit
import Locking

/// Where one participant's tone was heard, on the wall clock, across every audio file the
/// recorder wrote for them: the measure of what a fault cost a recording.
///
/// A participant who reconnects may come back under a new Janus feed id, into a new file, so
/// the files are found by user id, not feed id. Each file is decoded and placed on the wall
/// clock by its manifest times, its decoded samples following the file's own timestamps;
/// stretches of 20 ms that carry the tone count as covered. A hole is a stretch of at least
/// `minimumHole` between covered ones: a cut in the media (a jump in the timestamps) or
/// silence where the tone should be.
///
/// The anchor is the file's `last_frame` (its last sample ends there), `first_frame` when
/// there is no last: measured here, a file's timestamps span 0.2–0.25 s more than its first to
/// last frame on the wall clock, because the first frames come out of the jitter buffer in a
/// burst; placed by `first_frame`, everything after would sit that much late. Both are taken
/// where frames leave the jitter buffer (200 ms), so every placement is that much later than
/// the network saw it.
public enum Gaps {
    public struct Hole: Sendable, CustomStringConvertible {
        public var start: Date
        public var seconds: Double
        public var end: Date { start.addingTimeInterval(seconds) }
        public var description: String { String(format: "%.2f s at ", seconds) + Date.ISO8601FormatStyle(includingFractionalSeconds: true).format(start) }
    }

    /// One audio file of the participant, as decoded.
    public struct File: Sendable {
        public var name: String
        public var feedID: Int64
        /// Manifest `first_frame`; nil: no frame arrived.
        public var firstFrame: Date?
        /// Where its first sample was placed.
        public var placedAt: Date?
        /// Seconds between its first and last decoded sample, by its own timestamps.
        public var mediaSeconds: Double
        /// Seconds between the manifest's `first_frame` and `last_frame`.
        public var wallSeconds: Double?
        /// Wall-clock time its timestamps do not account for: a hole they closed up (a stream
        /// whose timestamps did not advance while its media was cut), which placing by
        /// timestamps cannot show. 0 for a file recorded without a break (whose timestamps
        /// span a little more than its wall time, see above).
        public var unplacedSeconds: Double { max(0, (wallSeconds ?? mediaSeconds) - mediaSeconds) }
    }

    public struct Coverage: Sendable {
        /// Covered stretches, in order, joined across holes shorter than `minimumHole`.
        public var stretches: [ClosedRange<Date>]
        public var holes: [Hole]
        public var files: [File]
        /// Seconds with the tone, every 20 ms counted once however many files hold it.
        public var coveredSeconds: Double

        public var first: Date? { stretches.first?.lowerBound }
        public var last: Date? { stretches.last?.upperBound }

        /// Seconds covered between `from` and `to`.
        public func covered(from: Date, to: Date) -> Double {
            stretches.reduce(0) { sum, s in sum + max(0, min(s.upperBound, to).timeIntervalSince(max(s.lowerBound, from))) }
        }

        /// When the tone was heard again at or after `t`: `t` itself if it was playing then.
        public func resumed(atOrAfter t: Date) -> Date? {
            stretches.first { $0.upperBound > t }.map { max($0.lowerBound, t) }
        }

        /// The longest stretch without the tone that ends after `t`, counting the time from the
        /// last covered instant to `end` (the recording's end) as one too: media that never
        /// came back is a gap to the end, not no gap.
        public func longestHole(after t: Date, until end: Date) -> Double {
            let inner = holes.filter { $0.end > t }.map(\.seconds)
            let trailing = max(0, end.timeIntervalSince(max(last ?? t, t)))
            return (inner + [trailing]).max() ?? trailing
        }

        /// The largest `unplacedSeconds` of any file.
        public var unplacedSeconds: Double { files.map(\.unplacedSeconds).max() ?? 0 }
    }

    /// Decodes every audio file `manifest.json` in `directory` lists for `userID` (all its
    /// feeds, whatever their feed id) and returns where the tone at `frequency` was heard.
    public static func measure(_ directory: URL, userID: String, frequency: Double = 440, minimumHole: Double = 0.1) async throws -> Coverage {
        let manifest = try RecordingManifest.read(from: directory)
        var files: [File] = [], pieces: [(Date, Date)] = []
        for feed in manifest.feeds where feed.userID == userID && feed.kind == "audio" {
            let decoded = try await toneWindows(directory.appendingPathComponent(feed.file), frequency: frequency)
            let wall = feed.firstFrame.flatMap { first in feed.lastFrame.map { $0.timeIntervalSince(first) } }
            let base = feed.lastFrame.map { $0.addingTimeInterval(-decoded.mediaSeconds) } ?? feed.firstFrame
            files.append(File(name: feed.file, feedID: feed.feedID, firstFrame: feed.firstFrame, placedAt: base,
                              mediaSeconds: decoded.mediaSeconds, wallSeconds: wall))
            guard let base else { continue }
            pieces += decoded.windows.map { (base.addingTimeInterval($0.start), base.addingTimeInterval($0.end)) }
        }
        return coverage(pieces, files: files, minimumHole: minimumHole)
    }

    /// Joins covered pieces: touching ones (1 ms) into one, then across holes shorter than
    /// `minimumHole`.
    public static func coverage(_ pieces: [(Date, Date)], files: [File] = [], minimumHole: Double) -> Coverage {
        func join(_ list: [(Date, Date)], within gap: Double) -> [(Date, Date)] {
            var out: [(Date, Date)] = []
            for (s, e) in list.sorted(by: { $0.0 < $1.0 }) {
                if let l = out.last, s.timeIntervalSince(l.1) <= gap { out[out.count - 1].1 = max(l.1, e) } else { out.append((s, e)) }
            }
            return out
        }
        let union = join(pieces, within: 0.001)
        let covered = union.reduce(0) { $0 + $1.1.timeIntervalSince($1.0) }
        let stretches = join(union, within: minimumHole - 0.001)
        let holes = zip(stretches, stretches.dropFirst()).map { Hole(start: $0.1, seconds: $1.0.timeIntervalSince($0.1)) }
        return Coverage(stretches: stretches.map { $0.0...$0.1 }, holes: holes, files: files, coveredSeconds: covered)
    }

    private final class Collected: @unchecked Sendable {
        // @unchecked: every access holds `lock`.
        public let lock = NSLock()
        public var chunks: [(pts: Double, samples: [Int16])] = []
    }

    /// The 20 ms windows of `file` that carry the tone, in seconds from its first decoded
    /// sample, and the seconds from its first to its last sample. Any container the recorder
    /// writes (Ogg, Matroska audio) goes through decodebin; timestamps are kept, so a cut
    /// shows as a jump.
    public static func toneWindows(_ file: URL, frequency: Double) async throws -> (windows: [(start: Double, end: Double)], mediaSeconds: Double) {
        guard FileManager.default.fileExists(atPath: file.path) else { throw PipelineRunError(message: "\(file.lastPathComponent) is listed but missing") }
        let pipeline = try Pipeline(description: """
            filesrc location="\(file.path)" ! decodebin ! audioconvert ! audioresample ! \
            audio/x-raw,format=S16LE,channels=1,rate=48000 ! fakesink name=a sync=false async=false
            """)
        let c = Collected()
        let probe = try pipeline.element(named: "a").staticPad("sink").addTimedBufferObserver { bytes, pts in
            guard let pts else { return }
            let samples = Array(bytes.bindMemory(to: Int16.self))
            c.lock.withLock { c.chunks.append((pts, samples)) }
        }
        try await pipeline.runToEnd()
        _ = probe
        let chunks = c.lock.withLock { c.chunks }.sorted { $0.pts < $1.pts }
        guard let origin = chunks.first?.pts, let tail = chunks.last else { return ([], 0) }
        let rate = 48000.0, size = 960
        var windows: [(start: Double, end: Double)] = []
        for chunk in chunks {
            for offset in stride(from: 0, to: chunk.samples.count, by: size) {
                let window = chunk.samples[offset..<min(offset + size, chunk.samples.count)]
                guard window.count >= size / 4, hasTone(window, at: frequency) else { continue }
                let start = chunk.pts - origin + Double(offset) / rate
                windows.append((start, start + Double(window.count) / rate))
            }
        }
        return (windows, tail.pts - origin + Double(tail.samples.count) / rate)
    }

    /// Loud enough (RMS above 1000 of 32767, about -30 dBFS; the test tone is -6 dBFS) and at
    /// least half of it at `frequency` (Goertzel, as `Audio.share`).
    public static func hasTone(_ window: ArraySlice<Int16>, at frequency: Double) -> Bool {
        let energy = window.reduce(0.0) { $0 + Double($1) * Double($1) }
        guard energy / Double(window.count) > 1_000_000 else { return false }
        return Audio.power(window, at: frequency) * 2 / Double(window.count) / energy > 0.5
    }
}
