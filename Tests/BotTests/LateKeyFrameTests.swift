import FrameCrypto
import Foundation
import GStreamerKit
import Testing
@testable import Bot
import TestSupport

/// Issue 39, item 7: a recorder that subscribes after the publisher's last keyframe asks for one
/// and gets it, whatever the publisher's keyframe interval. The publisher is our own test
/// pattern with a keyframe every 300 frames (30 s at 10 fps) unless asked (x264enc answers the
/// PLI Janus sends it). Janus asks by itself when a subscriber's PeerConnection comes up, not
/// when a feed is added to one that is up: there only the recorder's request (`configure`,
/// `VideoRoom.requestKeyFrame`) brings the keyframe; its RTCP PLI did not reach the publisher.
extension MediaScene {
@Suite struct LateKeyFrameTests {
    /// A copy of the pipelines with the test pattern's keyframe interval at 300 frames and IDRs
    /// only (x264's scene cuts, the pattern's black-white flips, would make non-IDR I frames,
    /// which FFmpeg does not start decoding on; libwebrtc sends IDRs only).
    static func longGOPPipelines(in dir: URL) throws -> PipelineLibrary {
        let copy = dir.appendingPathComponent("pipelines")
        try FileManager.default.copyItem(at: try PipelineLibrary().directory, to: copy)
        let pattern = copy.appendingPathComponent("play-test-pattern.pipeline")
        let text = try String(contentsOf: pattern, encoding: .utf8)
        guard text.contains("key-int-max=20") else { throw PipelineRunError(message: "play-test-pattern.pipeline no longer says key-int-max=20") }
        try text.replacingOccurrences(of: "key-int-max=20", with: "key-int-max=300 option-string=scenecut=0").write(to: pattern, atomically: true, encoding: .utf8)
        return try PipelineLibrary(directory: copy.path)
    }

    @Test("a recorder joining 3 s into a 30 s GOP records from about a second after its first frame arrived, not from the next keyframe")
    func lateRecorderStartsOnARequestedKeyFrame() async throws {
        let dir = try Scene.tempDirectory("latekey")
        let room = try await Scene.createRoom()
        let ring = KeyRing(current: .random())
        var publisherConfig = try Scene.config(room: room, display: "3:Pattern", protection: .e2ee(ring))
        publisherConfig.pipelines = try Self.longGOPPipelines(in: dir)
        let player = Task { try await Player(config: publisherConfig, source: .testPattern, duration: .seconds(14)).run() }
        // About 1 s to publish, then 3 s of pictures sent before the recorder subscribes.
        try await Task.sleep(for: .seconds(4))
        let out = dir.appendingPathComponent("rec")
        let recorderConfig = try Scene.config(room: room, display: "9:Late", protection: .e2ee(ring))
        let recorder = Task { try await Recorder(config: recorderConfig, directory: out).run() }
        let report = try await player.value
        try await Task.sleep(for: .seconds(1))
        recorder.cancel()
        let manifest = try await recorder.value
        let video = try #require(manifest.feeds.first { $0.kind == "video" }, "\(manifest.feeds.map(\.file)) \(manifest.unrecorded.map(\.kind))")
        let arrived = video.arrived ?? 0, written = video.written ?? 0
        let runs = try await Pictures.runs(out.appendingPathComponent(video.file))
        let decoded = runs.reduce(0) { $0 + $1.count }
        let facts = "sent \(report.videoFramesSent); arrived \(arrived); received \(video.frames.received); written \(written); decoded \(decoded); keyframes \(video.keyFrames ?? -1); requests \(video.keyFrameRequests ?? -1); first frame \(video.firstFrame.map { $0.timeIntervalSince(video.joined) } ?? -1) s after the branch"
        print("late recorder: \(facts)")
        #expect(manifest.errors.isEmpty, "\(manifest.errors.map(\.error))")
        // The recorder was there for about 9 s of the 14: 10 fps.
        #expect(arrived >= 60, "\(facts)")
        // Without an answered request the file would start at the next keyframe, 30 s away: nothing.
        #expect(arrived - written <= 15, "more than 1.5 s of pictures before the first keyframe: \(facts)")
        #expect((video.keyFrames ?? 0) >= 1 && (video.keyFrameRequests ?? 0) >= 1, "\(facts)")
        #expect(decoded == written, "\(facts)")
    }

    /// With every sender report dropped, the direct path holds a new stream's first packets the
    /// full 2 s (lip sync waits for one): the keyframe is asked for at its first packet, not
    /// when the held packets go out and its branch appears (2 s of pictures lost then).
    @Test("a long-GOP publisher joining a running recording (a feed added to a PeerConnection that is up): recorded from about a second after its first frame arrived",
          arguments: [false, true])
    func publisherJoiningARunningRecording(senderReportsDropped: Bool) async throws {
        if senderReportsDropped { try await Faults.dropSenderReports() }
        do {
            try await publisherJoining(senderReportsDropped: senderReportsDropped)
        } catch {
            if senderReportsDropped { try await Faults.allowSenderReports() }
            throw error
        }
        if senderReportsDropped { try await Faults.allowSenderReports() }
    }

    func publisherJoining(senderReportsDropped: Bool) async throws {
        let dir = try Scene.tempDirectory("latekey-join")
        let room = try await Scene.createRoom()
        let ring = KeyRing(current: .random())
        let first = Task { try await Player(config: try Scene.config(room: room, display: "2:First", protection: .e2ee(ring)), source: .testPattern, duration: .seconds(16)).run() }
        try await Task.sleep(for: .seconds(2))
        let out = dir.appendingPathComponent("rec")
        let recorder = Task { try await Recorder(config: try Scene.config(room: room, display: "9:Rec", protection: .e2ee(ring)), directory: out).run() }
        try await Task.sleep(for: .seconds(3))
        var longGOP = try Scene.config(room: room, display: "3:LongGOP", protection: .e2ee(ring))
        longGOP.pipelines = try Self.longGOPPipelines(in: dir)
        let report = try await Player(config: longGOP, source: .testPattern, duration: .seconds(9)).run()
        _ = try await first.value
        try await Task.sleep(for: .seconds(1))
        recorder.cancel()
        let manifest = try await recorder.value
        let video = try #require(manifest.feeds.first { $0.kind == "video" && $0.display == "3:LongGOP" }, "\(manifest.feeds.map(\.file)) \(manifest.unrecorded.map(\.kind))")
        let arrived = video.arrived ?? 0, written = video.written ?? 0
        let runs = try await Pictures.runs(out.appendingPathComponent(video.file))
        let decoded = runs.reduce(0) { $0 + $1.count }
        let facts = "sent \(report.videoFramesSent); arrived \(arrived); received \(video.frames.received); written \(written); decoded \(decoded); keyframes \(video.keyFrames ?? -1); requests \(video.keyFrameRequests ?? -1)"
        print("publisher joining a running recording\(senderReportsDropped ? " (sender reports dropped)" : ""): \(facts)")
        #expect(manifest.errors.isEmpty, "\(manifest.errors.map(\.error))")
        #expect(arrived >= 70 && Double(arrived) >= Double(report.videoFramesSent) * 0.9, "\(facts)")
        #expect(arrived - written <= 15, "more than 1.5 s of pictures before the first keyframe: \(facts)")
        #expect(decoded == written, "\(facts)")
    }

    @Test("the recorder's key arrives 3 s late: frames that open again after drops ask for a keyframe, recorded from about a second after, not 30 s")
    func framesOpeningAgainAfterDropsAskForAKeyFrame() async throws {
        let dir = try Scene.tempDirectory("latekey-key")
        let room = try await Scene.createRoom()
        let key = CallKey.random()
        let recorderRing = KeyRing(current: .random())
        let out = dir.appendingPathComponent("rec")
        let recorder = Task { try await Recorder(config: try Scene.config(room: room, display: "9:Rec", protection: .e2ee(recorderRing)), directory: out).run() }
        try await Task.sleep(for: .seconds(1))
        var longGOP = try Scene.config(room: room, display: "3:LongGOP", protection: .e2ee(KeyRing(current: key)))
        longGOP.pipelines = try Self.longGOPPipelines(in: dir)
        let player = Task { try await Player(config: longGOP, source: .testPattern, duration: .seconds(11)).run() }
        // About 1 s to publish, then 3 s of frames no key of the recorder opens.
        try await Task.sleep(for: .seconds(4))
        recorderRing.setCurrent(key)
        let keyAt = Date()
        let report = try await player.value
        try await Task.sleep(for: .seconds(1))
        recorder.cancel()
        let manifest = try await recorder.value
        let video = try #require(manifest.feeds.first { $0.kind == "video" }, "\(manifest.feeds.map(\.file)) \(manifest.unrecorded.map(\.kind))")
        let runs = try await Pictures.runs(out.appendingPathComponent(video.file))
        let decoded = runs.reduce(0) { $0 + $1.count }
        let written = video.written ?? 0
        // Frames sent after the key came, at 10 fps: what the file could hold.
        let afterKey = Int(((video.lastFrame ?? keyAt).timeIntervalSince(keyAt) * 10).rounded())
        let facts = "sent \(report.videoFramesSent); arrived \(video.arrived ?? -1); dropped \(video.frames.droppedTotal); opened \(video.frames.opened); written \(written) of ~\(afterKey) after the key; decoded \(decoded); keyframes \(video.keyFrames ?? -1); requests \(video.keyFrameRequests ?? -1)"
        print("key arriving late: \(facts)")
        #expect(video.frames.droppedTotal >= 15, "\(facts)")
        #expect(afterKey >= 50 && written >= afterKey - 15, "more than 1.5 s after the key before the first keyframe: \(facts)")
        #expect(decoded == written, "\(facts)")
    }
}
}
