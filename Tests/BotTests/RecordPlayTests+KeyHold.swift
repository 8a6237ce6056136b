import Bot
import FrameCrypto
import Foundation
import Synchronization
import Testing
import TestSupport

/// A recording that ends while frames are held for a key that never comes (issue 42): the end
/// settles the hold, so every held frame is counted as failed, none reaches a file, and
/// nothing is left unaccounted for.
extension MediaScene.RecordPlayTests {
    @Test(arguments: ReceivePath.allCases)
    func aRecordingThatEndsDuringAKeyHoldCountsEveryHeldFrame(path: ReceivePath) async throws {
        let dir = try Scene.tempDirectory("hold-end-\(path)")
        let tone = try await Audio.tone(440, seconds: 3, in: dir)
        let room = try await Scene.createRoom()
        var config = try Scene.config(room: room, display: "900:Recorder", protection: .e2ee(KeyRing(current: .random())))
        config.receivePath = path
        // Something asks for the key (so frames are held), and nothing ever answers; the hold
        // outlasts the recording.
        let asked = Atomic<Int>(0)
        config.onKeyMissing = { _ in asked.add(1, ordering: .relaxed) }
        config.keyHold = KeyHoldBounds(seconds: 600, frames: 10_000, bytes: 8 << 20)
        let out = dir.appendingPathComponent("rec")
        let recording = Task { try await Recorder(config: config, directory: out).run() }
        try await Task.sleep(for: .seconds(1))
        _ = try await Player(config: try Scene.config(room: room, display: "1:Sender", protection: .e2ee(KeyRing(current: .random()))),
                             file: tone.path).run()
        try await Task.sleep(for: .seconds(1.5))
        recording.cancel()
        let manifest = try await recording.value

        #expect(asked.load(ordering: .relaxed) > 100, "the key was asked for at every frame that failed")
        #expect(manifest.feeds.isEmpty && manifest.errors.isEmpty, "nothing opened, so nothing written: \(manifest.errors)")
        let feed = try #require(manifest.unrecorded.first)
        print("recording ended during a key hold (\(path.rawValue)): \(feed.frames)")
        #expect(feed.frames.received > 100 && feed.frames.opened == 0 && feed.frames.dropped["no_key_opens"] == feed.frames.received,
                "every held frame counted as failed at the end: \(feed.frames)")
        #expect(!FileManager.default.fileExists(atPath: out.appendingPathComponent(feed.file).path), "no file with no frame")
    }
}
