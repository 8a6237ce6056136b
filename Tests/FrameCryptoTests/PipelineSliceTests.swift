import FrameCrypto
import Foundation
import Locking
import Testing

/// The x264 settings of every sending pipeline give ONE slice per picture (libwebrtc can only
/// read the first slice's header through ECall's 2 clear bytes), and what they encode, once
/// sealed, reads as pic_parameter_set_id 0 in libwebrtc. Runs the encoder with each pipeline's
/// own `x264enc …` text (gst-launch-1.0, as `make test` machines have).
@Suite struct PipelineSliceTests {
    static let pipelines = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("pipelines")

    /// `x264enc …` up to the next `!`, from every pipeline that encodes H.264.
    static func encoders() throws -> [(file: String, element: String)] {
        let files = try FileManager.default.contentsOfDirectory(atPath: pipelines.path).filter { $0.hasSuffix(".pipeline") }.sorted()
        return try files.compactMap { file in
            let text = try String(contentsOf: pipelines.appendingPathComponent(file), encoding: .utf8)
                .split(separator: "\n").filter { !$0.trimmingCharacters(in: .whitespaces).hasPrefix("#") }.joined(separator: " ")
            guard let start = text.range(of: "x264enc ") else { return nil }
            let element = text[start.lowerBound...].prefix { $0 != "!" }
            // Placeholders as the bot fills them: ECall's 96 kbit/s, the phone preset's 600 kbit/s
            // and keyframe interval.
            let filled = ["{video_kbps}": "96", "{kbps}": "600", "{keyint}": "30"].reduce(String(element)) { $0.replacingOccurrences(of: $1.key, with: $1.value) }
            return (file, filled.trimmingCharacters(in: .whitespaces))
        }
    }

    /// 40 pictures of a moving 854x480 picture (ECall's largest) through `element`, as Annex-B.
    static func encode(_ element: String) throws -> [UInt8] {
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("sfubot-slices-\(UUID().uuidString).h264")
        defer { try? FileManager.default.removeItem(at: out) }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["gst-launch-1.0", "-q", "videotestsrc", "num-buffers=40", "pattern=ball", "!",
                       "video/x-raw,width=854,height=480,framerate=10/1", "!", "videoconvert", "!"]
            + element.split(separator: " ").map(String.init)
            + ["!", "video/x-h264,profile=constrained-baseline", "!", "h264parse", "!",
               "video/x-h264,stream-format=byte-stream,alignment=au", "!", "filesink", "location=\(out.path)"]
        try p.run()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else { throw CocoaError(.fileWriteUnknown) }
        return [UInt8](try Data(contentsOf: out))
    }

    @Test func sendingPipelinesEncodeOneSlicePerPictureThatLibWebRTCReadsAfterSealing() async throws {
        let encoders = try Self.encoders()
        #expect(encoders.map(\.file) == ["live-source.pipeline", "load-source-video.pipeline", "play-av.pipeline", "play-test-pattern.pipeline", "relay-composite.pipeline"])
        let frames = VideoFrameTests()
        for (file, element) in encoders {
            // A child process awaited: a test blocked in `waitUntilExit` on the pool stalls every other.
            let stream = try await OffPool.run { try Self.encode(element) }
            let nals = stream.withUnsafeBytes { NALUnits.annexB($0) }.map { Array(stream[$0]) }
            let slices = nals.filter { NALUnits.isSlice($0[0]) }
            let headers = slices.compactMap { LibWebRTCSliceParser.parse(nal: $0) }
            #expect(slices.count == 40, "\(file): \(slices.count) slices for 40 pictures (\(element))")
            #expect(headers.count == slices.count && headers.allSatisfy { $0.firstMB == 0 && $0.ppsID == 0 }, "\(file)")
            #expect(slices.contains { $0[0] & 0x1F == 5 } && slices.contains { $0[0] & 0x1F == 1 }, "\(file): IDR and P slices")
            // Sealed as sfubot sends them, each slice still reads first_mb 0 / pps_id 0 in libwebrtc.
            for slice in slices {
                let sealed = try #require(VideoFrameTests.nals(try frames.seal(VideoFrameTests.au([slice]))).first)
                #expect(LibWebRTCSliceParser.parse(nal: sealed) == LibWebRTCSliceParser.parse(nal: slice), "\(file)")
            }
        }
    }
}
