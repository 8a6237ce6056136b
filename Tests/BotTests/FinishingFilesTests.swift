@testable import Bot
import FrameCrypto
import Foundation
import GStreamerKit
import Logging
import Testing
import TestSupport

/// The steps that finish a recording's files, on files made here (no Janus): the A/V merge and
/// the read-back that writes what is on disk into the manifest. What a user lost before: a
/// merge cut short by the stop's cancellation wrote a 0-byte file and deleted its inputs.
@Suite struct FinishingFilesTests {
    let library: PipelineLibrary
    let dir: URL
    let log = Logger(label: "test.finishing")

    init() throws {
        library = try PipelineLibrary()
        dir = try Scene.tempDirectory("finishing")
    }

    /// About `frames` 20 ms Opus frames in an Ogg file or a single-track Matroska file; returns
    /// how many went into the muxer (opusenc adds one for its look-ahead), counted as they passed.
    func audio(_ name: String, frames: Int) async throws -> (URL, Int) {
        let url = dir.appendingPathComponent(name)
        let mux = url.pathExtension == "opus" ? "oggmux" : "matroskamux"
        let pipeline = try Pipeline(description: "audiotestsrc freq=440 num-buffers=\(frames) samplesperbuffer=960 ! audio/x-raw,rate=48000,channels=1 ! opusenc frame-size=20 ! opusparse name=p ! \(mux) ! filesink location=\"\(url.path)\"")
        let count = Counter()
        let probe = try pipeline.element(named: "p").staticPad("src").addBufferObserver { _ in count.increment() }
        try await pipeline.runToEnd()
        probe.remove()
        return (url, count.value)
    }

    /// `frames` H.264 access units (avc) in a single-track Matroska file, a keyframe every 15.
    func video(_ name: String, frames: Int) async throws -> URL {
        let url = dir.appendingPathComponent(name)
        try await runToEnd("videotestsrc num-buffers=\(frames) ! video/x-raw,width=320,height=180,framerate=15/1 ! x264enc speed-preset=ultrafast key-int-max=15 bframes=0 ! video/x-h264,stream-format=avc,alignment=au ! h264parse ! matroskamux ! filesink location=\"\(url.path)\"")
        return url
    }

    func entry(_ file: String, kind: String, written: Int?, feed: Int64 = 7) -> RecordingManifest.Feed {
        RecordingManifest.Feed(
            feedID: feed, display: "3:Ann", userID: "3", displayName: "Ann", mid: kind == "video" ? "1" : "0", kind: kind,
            codec: kind == "video" ? "h264" : "opus", file: file, joined: Date(), left: Date(), firstFrame: Date(), lastFrame: Date(),
            frames: .zero, firstMediaTime: 1, lastMediaTime: 9, written: written)
    }

    func manifest(_ feeds: [RecordingManifest.Feed]) -> RecordingManifest {
        RecordingManifest(room: 1, janus: "ws://127.0.0.1:8188", e2ee: true, started: Date(), ended: Date(), feeds: feeds)
    }

    @Test("a merge asked for by a task already cancelled (Ctrl-C) still writes every frame, then deletes its inputs")
    func mergeIsNotCutShortByCancellation() async throws {
        _ = try await video("7-3.video.mkv", frames: 60)
        let (_, audioFrames) = try await audio("7-3.audio.mka", frames: 200)
        let entries = [entry("7-3.video.mkv", kind: "video", written: 60), entry("7-3.audio.mka", kind: "audio", written: audioFrames)]
        let remux = TrackRemux(library: library, directory: dir, logger: log)
        let task = Task { () -> [RecordingManifest.Feed] in
            withUnsafeCurrentTask { $0?.cancel() }
            return await remux.merge(entries)
        }
        let merged = await task.value
        #expect(merged.allSatisfy { $0.file == "7-3.mkv" && $0.notMerged == nil }, "\(merged.map(\.file)) \(merged.map(\.notMerged))")
        let contents = try await ReadBack(library: library).read(dir.appendingPathComponent("7-3.mkv"), audio: true, video: true)
        #expect(contents.video?.frames == 60 && contents.audio?.frames == audioFrames, "\(contents)")
        #expect(contents.video?.decoded ?? 0 >= 15, "pictures decoded from the merged file")
        let left = try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted()
        #expect(left == ["7-3.mkv"], "the inputs deleted once the merged file checked out, nothing else left: \(left)")
        // Decoded as a user would: every picture of the merged file.
        #expect(try await Audio.videoLuma(dir.appendingPathComponent("7-3.mkv")).count == 60)
    }

    @Test("a merge that fails keeps both track files as they were and says why")
    func failedMergeKeepsTheTrackFiles() async throws {
        let video = try await video("8-3.video.mkv", frames: 30)
        let audio = dir.appendingPathComponent("8-3.audio.mka")
        try Data(repeating: 0x42, count: 4096).write(to: audio)
        let before = try Data(contentsOf: video)
        let entries = [entry("8-3.video.mkv", kind: "video", written: 30, feed: 8), entry("8-3.audio.mka", kind: "audio", written: 50, feed: 8)]
        let merged = await TrackRemux(library: library, directory: dir, logger: log).merge(entries)
        #expect(merged.map(\.file) == ["8-3.video.mkv", "8-3.audio.mka"])
        #expect(merged.allSatisfy { $0.notMerged != nil })
        #expect(try Data(contentsOf: video) == before, "the video track file is untouched")
        #expect(FileManager.default.fileExists(atPath: audio.path))
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.path)
        #expect(!names.contains { $0.hasSuffix(".partial") || $0 == "8-3.mkv" }, "nothing half-written left: \(names)")
    }

    @Test("the read-back writes what each file holds; fewer frames than written is an error")
    func readBackTellsTheTruth() async throws {
        let (_, first) = try await audio("1-a.opus", frames: 150)
        let (_, second) = try await audio("2-b.opus", frames: 100)
        let checked = await RecordingCheck(library: library, directory: dir, logger: log).check(manifest([
            entry("1-a.opus", kind: "audio", written: first, feed: 1), entry("2-b.opus", kind: "audio", written: second + 19, feed: 2),
        ]))
        let a = try #require(checked.feeds.first { $0.feedID == 1 }?.onDisk)
        #expect(a.frames == first && a.decoded == first && abs((a.seconds ?? 0) - Double(first - 1) * 0.02) < 0.01, "\(a)")
        #expect(checked.feeds.first { $0.feedID == 2 }?.onDisk?.frames == second)
        #expect(checked.errors.count == 1 && checked.errors[0].feedID == 2 && checked.errors[0].error.contains("\(second) of the \(second + 19)"), "\(checked.errors)")
        #expect(checked.lostSomething)
    }

    @Test("a track with no frame written leaves no file and is listed as unrecorded, not as a recording")
    func emptyTrackLeavesNoFile() async throws {
        let empty = dir.appendingPathComponent("3-c.opus")
        _ = FileManager.default.createFile(atPath: empty.path, contents: Data())
        let checked = await RecordingCheck(library: library, directory: dir, logger: log).check(manifest([entry("3-c.opus", kind: "audio", written: 0, feed: 3)]))
        #expect(checked.feeds.isEmpty && checked.unrecorded.map(\.feedID) == [3])
        #expect(checked.errors.isEmpty, "nothing was written, so nothing was lost")
        #expect(!FileManager.default.fileExists(atPath: empty.path), "the 0-byte file is removed")
    }

    @Test("a file that does not parse is never listed as a recording, and it is a loss")
    func garbageIsALoss() async throws {
        let bad = dir.appendingPathComponent("4-d.opus")
        try Data(repeating: 0x17, count: 10_000).write(to: bad)
        let checked = await RecordingCheck(library: library, directory: dir, logger: log).check(manifest([entry("4-d.opus", kind: "audio", written: 40, feed: 4)]))
        #expect(checked.feeds.isEmpty && checked.unrecorded.map(\.feedID) == [4])
        #expect(checked.errors.count == 1 && checked.errors[0].error.contains("4-d.opus"), "\(checked.errors)")
        #expect(FileManager.default.fileExists(atPath: bad.path), "a file with bytes in it is kept for whoever can salvage it")
    }
}
