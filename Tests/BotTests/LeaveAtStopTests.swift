import Foundation
import FrameCrypto
import Testing
@testable import Bot
import TestSupport

/// Issue 39, item 5: a publisher who leaves as the recording ends. The leave's files were
/// being finished when the stop wrote the last manifest, which then had `feeds: []` and a summary
/// of 0 frames received, the tracks left unmerged. The interleaving is forced with a hook (the
/// leave held after its branches were detached), not with timing.
extension MediaScene {
@Suite struct LeaveAtStopTests {
    @Test("the stop runs while a leave is finishing its files: the feed is in the manifest with its counts, merged, read back")
    func aLeaveRacingTheStopKeepsItsFeed() async throws {
        let dir = try Scene.tempDirectory("leave-at-stop")
        let ring = KeyRing(current: .random())
        let room = try await Scene.createRoom()
        let reached = Latch(), release = Latch()
        let recording = RoomRecording(
            config: try Scene.config(room: room, display: "9:Rec", protection: .e2ee(ring)), directory: dir, mixFile: nil,
            hooks: .init(publisherLeaving: {
                reached.open()
                await release.wait()
            }))
        try await recording.start()
        let following = Task { try await recording.follow(for: .seconds(120)) }
        defer { following.cancel() }
        let player = Player(config: try Scene.config(room: room, display: "4:Pat", protection: .e2ee(ring)), source: .testPattern, duration: .seconds(5))
        let report = try await player.run()
        // The publisher left; its leave is held with its branches detached. Now the stop.
        await reached.wait()
        let final = try #require(await recording.finish())
        release.open()

        let audio = try #require(final.feeds.first { $0.kind == "audio" }, "feeds \(final.feeds.map(\.file)), unrecorded \(final.unrecorded.map(\.file))")
        let video = try #require(final.feeds.first { $0.kind == "video" })
        print("leave at the stop: sent \(report.framesSent) audio frames; recorded audio \(audio.frames.received) received, \(audio.onDisk?.frames ?? -1) on disk; video \(video.frames.received) received in \(video.file)")
        // 5 s of 20 ms frames sent; the subscription comes up a moment after the publisher.
        #expect(audio.frames.received >= 150 && audio.onDisk?.frames == audio.written, "\(audio.frames) written \(audio.written ?? -1) on disk \(audio.onDisk?.frames ?? -1)")
        #expect(video.frames.received >= 20 && video.onDisk?.frames == video.written, "\(video.frames)")
        #expect(audio.file == video.file && audio.file.hasSuffix(".mkv") && audio.notMerged == nil, "merged: \(audio.file), \(video.file)")
        #expect(final.errors.isEmpty && final.participants.count == 1, "\(final.errors.map(\.error)) participants \(final.participants.count)")
        // What a user reads: manifest.json on disk says the same.
        let onDisk = try RecordingManifest.read(from: dir)
        #expect(onDisk.feeds.count == 2 && onDisk.ended != nil, "manifest.json: \(onDisk.feeds.map(\.file)) ended \(String(describing: onDisk.ended))")
        let samples = try await Audio.decode(dir.appendingPathComponent(audio.file))
        #expect(Double(samples.count) / 48000 >= 3, "\(Double(samples.count) / 48000) s of audio decode")
    }
}
}
