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

        let asks = asked.load(ordering: .relaxed)
        #expect(asks > 100, "the key was asked for at every frame that failed")
        #expect(manifest.feeds.isEmpty && manifest.errors.isEmpty, "nothing opened, so nothing written: \(manifest.errors)")
        let feed = try #require(manifest.unrecorded.first)
        print("recording ended during a key hold (\(path.rawValue)): \(feed.frames)")
        #expect(feed.frames.received > 100 && feed.frames.opened == 0 && feed.frames.dropped["no_key_opens"] == feed.frames.received,
                "every held frame counted as failed at the end: \(feed.frames)")
        #expect(!FileManager.default.fileExists(atPath: out.appendingPathComponent(feed.file).path), "no file with no frame")
    }

    /// Audio and video of a publisher whose key the recorder learns only after its first frames
    /// failed (as the ECall agent's answer from the key host): the held frames, the first
    /// keyframe among them, open with the key and the file decodes from its start.
    @Test(arguments: ReceivePath.allCases)
    func heldVideoOpensWithTheKeyWhenItComes(path: ReceivePath) async throws {
        let room = try await Scene.createRoom()
        let current = CallKey.random(), ring = KeyRing(current: .random())
        var config = try Scene.config(room: room, display: "900:Recorder", protection: .e2ee(ring))
        config.receivePath = path
        let asked = Atomic<Bool>(false)
        config.onKeyMissing = { _ in
            guard !asked.exchange(true, ordering: .relaxed) else { return }
            Task { try? await Task.sleep(for: .milliseconds(300)); ring.setCurrent(current) }
        }
        let out = try Scene.tempDirectory("hold-video-\(path)").appendingPathComponent("rec")
        let recording = Task { try await Recorder(config: config, directory: out).run() }
        try await Task.sleep(for: .seconds(1))
        _ = try await Player(config: try Scene.config(room: room, display: "3:Sender", protection: .e2ee(KeyRing(current: current))),
                             source: .testPattern, duration: .seconds(5)).run()
        try await Task.sleep(for: .seconds(1.5))
        recording.cancel()
        let manifest = try await recording.value

        let didAsk = asked.load(ordering: .relaxed)
        #expect(didAsk, "frames failed with the stale key")
        let video = try #require(manifest.feeds.first { $0.kind == "video" })
        let audio = try #require(manifest.feeds.first { $0.kind == "audio" })
        print("held video (\(path.rawValue)): video \(video.frames), audio \(audio.frames)")
        for feed in [video, audio] {
            #expect(feed.frames.droppedTotal == 0 && feed.frames.opened == feed.frames.received && feed.frames.opened > 30, "\(feed.kind): \(feed.frames)")
        }
        let luma = try await Audio.videoLuma(out.appendingPathComponent(video.file))
        #expect(luma.count >= 40, "\(luma.count) pictures decoded of \(video.frames.opened) opened")
    }
}
