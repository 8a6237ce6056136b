@testable import Bot
import FrameCrypto
import Foundation
import GStreamerKit
import Logging
import Testing
import TestSupport

/// Issue 39, item 6: the read-back counts what is on disk exactly, as FFmpeg counts it. A
/// false loss ("holds 613 of the 615 audio frames written to it") fails `record` and a serve
/// job as surely as a real one.
@Suite struct ReadBackCountTests {
    let dir: URL
    init() throws { dir = try Scene.tempDirectory("readback-count") }

    /// Packets in the first audio stream, as ffprobe counts them.
    static func ffprobePackets(_ url: URL) async throws -> Int {
        let run = try await ChildProcess.run("/usr/bin/ffprobe", ["-v", "error", "-count_packets", "-select_streams", "a:0",
                                                                  "-show_entries", "stream=nb_read_packets", "-of", "csv=p=0", url.path])
        return try #require(Int(run.outText.trimmingCharacters(in: .whitespacesAndNewlines)), "ffprobe: \(run.outText) \(run.errText)")
    }

    /// An Ogg Opus file of 150 frames (oggmux pages of 0.5 s) whose last page's granule position
    /// is set back to an earlier page's (its checksum made right again): timestamps that went
    /// back at the end of a recording.
    func steppedBack() async throws -> URL {
        let url = dir.appendingPathComponent("5-e.opus")
        try await runToEnd("audiotestsrc num-buffers=150 samplesperbuffer=960 ! audio/x-raw,rate=48000,channels=2 ! opusenc frame-size=20 ! opusparse ! oggmux max-page-delay=500000000 ! filesink location=\"\(url.path)\"")
        var bytes = [UInt8](try Data(contentsOf: url))
        var pages: [Int] = []
        var at = 0
        while at + 27 <= bytes.count {
            pages.append(at)
            let segments = Int(bytes[at + 26])
            at += 27 + segments + bytes[(at + 27)..<(at + 27 + segments)].reduce(0) { $0 + Int($1) }
        }
        let last = pages[pages.count - 1], earlier = pages[pages.count - 3]
        bytes.replaceSubrange((last + 6)..<(last + 14), with: bytes[(earlier + 6)..<(earlier + 14)])
        let crc = bytes.withUnsafeBytes { OggPackets.checksum($0, page: last, size: bytes.count - last) }
        bytes.replaceSubrange((last + 22)..<(last + 26), with: (0..<4).map { UInt8(truncatingIfNeeded: crc >> (8 * $0)) })
        try Data(bytes).write(to: url)
        return url
    }

    @Test("an Ogg Opus whose last page steps back in time: the read-back counts every packet ffprobe counts, and no loss is reported")
    func steppedBackOggIsCountedWhole() async throws {
        let url = try await steppedBack()
        let onDisk = try await Self.ffprobePackets(url)
        // The file is one the old read-back (oggdemux in pull mode, counted after the parser) undercounted.
        let old = try Pipeline(description: "filesrc location=\"\(url.path)\" ! oggdemux ! opusparse name=p ! fakesink sync=false")
        let oldCount = Counter()
        let probe = try old.element(named: "p").staticPad("src").addBufferObserver { _ in oldCount.increment() }
        try await old.runToEnd()
        probe.remove()
        print("stepped-back Ogg: ffprobe \(onDisk) packets, the old read-back \(oldCount.value)")
        #expect(oldCount.value < onDisk, "the old way undercounted: \(oldCount.value) of \(onDisk)")

        let library = try PipelineLibrary()
        let read = try await ReadBack(library: library).read(url, audio: true, video: false)
        #expect(read.audio?.frames == onDisk, "read back \(read.audio?.frames ?? -1), ffprobe \(onDisk)")
        #expect(read.audio?.decoded ?? 0 >= onDisk - 1, "decoded \(read.audio?.decoded ?? -1)")

        let feed = RecordingManifest.Feed(
            feedID: 5, display: "5:\u{1F3A4} Eve", userID: "5", displayName: "\u{1F3A4} Eve", mid: "0", kind: "audio", codec: "opus",
            file: url.lastPathComponent, joined: Date(), left: Date(), firstFrame: Date(), lastFrame: Date(),
            frames: .zero, firstMediaTime: 1, lastMediaTime: 4, written: onDisk)
        let manifest = RecordingManifest(room: 1, janus: "ws://127.0.0.1:8188", e2ee: true, started: Date(), ended: Date(), feeds: [feed])
        let checked = await RecordingCheck(library: library, directory: dir, logger: Logger(label: "test.readback")).check(manifest)
        #expect(checked.errors.isEmpty && !checked.lostSomething, "\(checked.errors.map(\.error))")
        #expect(checked.feeds.first?.onDisk?.frames == onDisk)
    }

    @Test("Ogg packets counted from the pages: a page cut short or damaged holds none; headers are no frames")
    func pagesAreCountedAsOnDisk() async throws {
        let url = dir.appendingPathComponent("6-f.opus")
        try await runToEnd("audiotestsrc num-buffers=100 samplesperbuffer=960 ! audio/x-raw,rate=48000,channels=1 ! opusenc frame-size=20 ! opusparse ! oggmux max-page-delay=500000000 ! filesink location=\"\(url.path)\"")
        let whole = try await Self.ffprobePackets(url)
        #expect(OggPackets.count(url) == whole)
        // Cut in the middle of the last page: its frames are not on disk.
        let bytes = try Data(contentsOf: url)
        let cut = dir.appendingPathComponent("6-g.opus")
        try bytes.prefix(bytes.count - 200).write(to: cut)
        let afterCut = try await Self.ffprobePackets(cut)
        #expect(OggPackets.count(cut) == afterCut && afterCut < whole)
        print("Ogg packets: whole \(whole) (ffprobe \(whole)); cut \(OggPackets.count(cut) ?? -1) (ffprobe \(afterCut))")
    }
}
