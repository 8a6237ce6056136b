import Foundation
import Testing
import TestSupport

/// `Gaps.measure` on files made here with known holes and a manifest written by hand: before
/// it judges a reconnection, the measure itself must find a hole where there is one, and only
/// there. GStreamer only, no Janus.
@Suite struct FaultGapTests {
    static let t0 = Date(timeIntervalSince1970: 1_714_557_600)  // 2024-05-01T10:00:00Z

    /// A 48 kHz mono Ogg Opus file of `parts`: (seconds, tone or silence), in order.
    static func opus(_ name: String, _ parts: [(Double, Bool)], in dir: URL) async throws -> String {
        var samples: [Int16] = []
        for (seconds, tone) in parts {
            let n = Int(seconds * 48000), start = samples.count
            samples += (0..<n).map { i in tone ? Int16(16000 * sin(2 * Double.pi * 440 * Double(start + i) / 48000)) : 0 }
        }
        let wav = dir.appendingPathComponent("\(name).wav")
        try wavData(samples).write(to: wav)
        try await runToEnd("filesrc location=\"\(wav.path)\" ! wavparse ! audioconvert ! opusenc ! oggmux ! filesink location=\"\(dir.appendingPathComponent("\(name).opus").path)\"")
        return "\(name).opus"
    }

    static func wavData(_ samples: [Int16]) -> Data {
        var d = Data()
        func u32(_ v: Int) { withUnsafeBytes(of: UInt32(v).littleEndian) { d.append(contentsOf: $0) } }
        func u16(_ v: Int) { withUnsafeBytes(of: UInt16(v).littleEndian) { d.append(contentsOf: $0) } }
        d.append(contentsOf: Array("RIFF".utf8)); u32(36 + samples.count * 2); d.append(contentsOf: Array("WAVEfmt ".utf8))
        u32(16); u16(1); u16(1); u32(48000); u32(96000); u16(2); u16(16)
        d.append(contentsOf: Array("data".utf8)); u32(samples.count * 2)
        for s in samples { withUnsafeBytes(of: s.littleEndian) { d.append(contentsOf: $0) } }
        return d
    }

    /// One manifest feed entry, as the recorder writes it.
    static func feed(_ id: Int64, user: String, kind: String = "audio", file: String, first: Double, last: Double) -> String {
        func at(_ s: Double) -> String { "\"\(Date.ISO8601FormatStyle(includingFractionalSeconds: true).format(t0.addingTimeInterval(s)))\"" }
        return """
            {"feed_id": \(id), "display": "\(user):Someone", "user_id": "\(user)", "display_name": "Someone", "mid": "0",
             "kind": "\(kind)", "codec": "\(kind == "audio" ? "opus" : "h264")", "file": "\(file)", "joined": \(at(0)),
             "first_frame": \(at(first)), "last_frame": \(at(last)),
             "frames": {"sealed": 0, "seal_failed": 0, "received": 100, "opened": 100, "dropped": {}}}
            """
    }

    static func writeManifest(_ feeds: [String], in dir: URL) throws {
        let text = """
            {"room": 1234, "janus": "ws://127.0.0.1:8188", "e2ee": true, "started": "2024-05-01T10:00:00.000Z",
             "ended": "2024-05-01T10:00:08.000Z", "timeline": [], "errors": [], "feeds": [\(feeds.joined(separator: ",\n"))]}
            """
        try Data(text.utf8).write(to: dir.appendingPathComponent("manifest.json"))
    }

    static func seconds(_ d: Date) -> Double { d.timeIntervalSince(t0) }

    @Test("a participant in two files (two feed ids) with 0.5 s between them: one hole of 0.5 s, 5 s covered")
    func holeBetweenTwoFeeds() async throws {
        let dir = try Scene.tempDirectory("gaps")
        let a = try await Self.opus("a", [(2, true)], in: dir), b = try await Self.opus("b", [(3, true)], in: dir)
        let c = try await Self.opus("c", [(1, true), (0.5, false), (1, true)], in: dir)
        try Self.writeManifest([
            Self.feed(11, user: "7", file: a, first: 1, last: 3),
            Self.feed(12, user: "7", file: b, first: 3.5, last: 6.5),
            Self.feed(13, user: "8", file: c, first: 1, last: 3.5),
            // Video of user 7: not audio, never opened.
            Self.feed(14, user: "7", kind: "video", file: "missing.mkv", first: 1, last: 6.5),
        ], in: dir)

        let seven = try await Gaps.measure(dir, userID: "7")
        print("gaps, user 7: holes \(seven.holes), covered \(seven.coveredSeconds) s")
        #expect(seven.files.map(\.feedID) == [11, 12], "both feeds of the user, and only the audio")
        let hole = try #require(seven.holes.count == 1 ? seven.holes.first : nil, "one hole: \(seven.holes)")
        #expect(abs(Self.seconds(hole.start) - 3) < 0.05 && abs(hole.seconds - 0.5) < 0.05, "\(hole)")
        #expect(abs(seven.coveredSeconds - 5) < 0.1)
        let first = try #require(seven.first), last = try #require(seven.last)
        #expect(abs(Self.seconds(first) - 1) < 0.05 && abs(Self.seconds(last) - 6.5) < 0.05)
        #expect(seven.unplacedSeconds < 0.05, "files recorded without a break: \(seven.files)")
        // From the hole on until the recording's end (8 s): the 1.5 s with no tone at the end is the longest.
        #expect(abs(seven.longestHole(after: Self.t0.addingTimeInterval(2.5), until: Self.t0.addingTimeInterval(8)) - 1.5) < 0.05)
        #expect(abs(seven.longestHole(after: Self.t0.addingTimeInterval(2.5), until: Self.t0.addingTimeInterval(6.5)) - 0.5) < 0.05)
        #expect(abs(Self.seconds(try #require(seven.resumed(atOrAfter: Self.t0.addingTimeInterval(3.2)))) - 3.5) < 0.05)
        #expect(abs(seven.covered(from: Self.t0, to: Self.t0.addingTimeInterval(3.2)) - 2) < 0.05)

        let eight = try await Gaps.measure(dir, userID: "8")
        print("gaps, user 8: holes \(eight.holes), covered \(eight.coveredSeconds) s")
        let silence = try #require(eight.holes.count == 1 ? eight.holes.first : nil, "one hole: \(eight.holes)")
        #expect(abs(Self.seconds(silence.start) - 2) < 0.05 && abs(silence.seconds - 0.5) < 0.05, "silence inside one file is a hole: \(silence)")
        #expect(abs(eight.coveredSeconds - 2) < 0.1)
    }

    @Test("two files of one participant that overlap count their common time once; no hole")
    func overlappingFiles() async throws {
        let dir = try Scene.tempDirectory("gaps-overlap")
        let a = try await Self.opus("a", [(2, true)], in: dir)
        try Self.writeManifest([Self.feed(21, user: "9", file: a, first: 1, last: 3), Self.feed(22, user: "9", file: a, first: 2, last: 4)], in: dir)
        let nine = try await Gaps.measure(dir, userID: "9")
        #expect(nine.holes.isEmpty, "\(nine.holes)")
        #expect(abs(nine.coveredSeconds - 3) < 0.1, "\(nine.coveredSeconds)")
        #expect(try await Gaps.measure(dir, userID: "nobody").coveredSeconds == 0)
    }

    @Test("a file is placed by its last frame; wall time its timestamps do not cover is reported as unplaced")
    func placedByLastFrame() async throws {
        let dir = try Scene.tempDirectory("gaps-anchor")
        let a = try await Self.opus("a", [(2, true)], in: dir)
        // 2 s of media between frames 2.6 s apart: 0.6 s the file's timestamps closed up.
        try Self.writeManifest([Self.feed(41, user: "6", file: a, first: 1, last: 3.6)], in: dir)
        let six = try await Gaps.measure(dir, userID: "6")
        let first = try #require(six.first), last = try #require(six.last)
        #expect(abs(Self.seconds(first) - 1.6) < 0.05 && abs(Self.seconds(last) - 3.6) < 0.05, "\(six.stretches)")
        #expect(abs(six.unplacedSeconds - 0.6) < 0.05, "\(six.files)")
    }

    @Test("a file the manifest lists but that is gone is an error, not a gap nobody sees")
    func missingFileThrows() async throws {
        let dir = try Scene.tempDirectory("gaps-missing")
        try Self.writeManifest([Self.feed(31, user: "5", file: "gone.opus", first: 1, last: 3)], in: dir)
        await #expect(throws: (any Error).self) { _ = try await Gaps.measure(dir, userID: "5") }
    }
}
