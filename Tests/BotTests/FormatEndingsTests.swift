import Bot
import Foundation
import FrameCrypto
import Testing
import TestSupport

/// The endings of RecordingEndingsTests for the formats whose frames name their key: a PQSRTC
/// (FrameCryptor) A/V call and an SFrame audio call, stopped by SIGTERM and by the publisher
/// leaving, read back by decoding what is on disk. Exit 0 only with every frame opened and kept.
extension MediaScene {
@Suite struct FormatEndingsTests {
    enum Format: String, CaseIterable, Sendable { case framecryptor, sframe }
    enum Ending: String, CaseIterable, Sendable { case sigterm, publisherLeft }

    @Test("a FrameCryptor or SFrame recording keeps every frame through SIGTERM and a publisher leaving",
          arguments: Format.allCases, Ending.allCases)
    func endingKeepsEverything(_ format: Format, _ ending: Ending) async throws {
        let room = try await Scene.createRoom()
        let dir = try Scene.tempDirectory("fmt-end-\(format.rawValue)-\(ending.rawValue)")
        let out = dir.appendingPathComponent("rec")
        let key = (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        var formatArgs = ["--frame-format", format.rawValue, "--key-hex", key]
        if format == .framecryptor { formatArgs += ["--ratchet-salt", "PQSRTCFrameEncryptionSalt"] }
        let recorder = try CLITests.start(["record", "--janus", Scene.janusURL!, "--room", "\(room)", "--out", out.path] + formatArgs)
        defer { recorder.signal(SIGKILL) }
        try await Task.sleep(for: .seconds(1))
        // SFrame seals the whole H.264 frame, which libwebrtc's packetizer cannot send: audio only.
        let withVideo = format == .framecryptor
        let media = withVideo ? ["--test-pattern"] : [try await Audio.tone(440, seconds: 30, in: dir).path]
        let player = try CLITests.start(["play"] + media + ["--janus", Scene.janusURL!, "--room", "\(room)", "--display", "7:Pia",
                                                            "--duration", ending == .publisherLeft ? "5" : "30"] + formatArgs)
        defer { player.signal(SIGKILL) }
        let end: Date
        if ending == .publisherLeft {
            _ = await player.finished()
            end = Date()
            try await Task.sleep(for: .seconds(1))
        } else {
            try await Task.sleep(for: .seconds(6))
            end = Date()
        }
        recorder.signal(ending == .sigterm ? SIGTERM : SIGINT)
        let finished = await recorder.finished()
        #expect(finished.status == 0, "exit \(finished.status): \(finished.errText.suffix(1500))")
        #expect(!finished.errText.contains(key) && !finished.outText.contains(key), "the key never in the output")

        let manifest = try RecordingManifest.read(from: out)
        #expect(manifest.frameFormat == FrameFormatName(rawValue: format.rawValue))
        #expect(manifest.errors.isEmpty, "\(manifest.errors.map(\.error))")
        let feeds = manifest.feeds.filter { $0.userID == "7" }
        #expect(Set(feeds.map(\.kind)) == (withVideo ? ["audio", "video"] : ["audio"]), "\(feeds.map(\.file))")
        for feed in feeds {
            #expect(feed.frames.droppedTotal == 0 && feed.frames.opened > 0, "\(feed.kind): \(feed.frames)")
            #expect(feed.onDisk?.frames == feed.written && feed.written ?? 0 > 0, "\(feed.kind): \(String(describing: feed.onDisk)), \(feed.written ?? -1) written")
        }
        // About 4 s at least: the publisher played 5 s (or 6 s before the stop), less its start;
        // on a loaded machine its join takes longer: at least from its first frame to the end.
        let audio = try #require(feeds.first { $0.kind == "audio" })
        let samples = try await Audio.decode(out.appendingPathComponent(audio.file))
        let first = try #require(audio.firstFrame, "the audio's first frame")
        let expected = min(3.5, end.timeIntervalSince(first) - 0.5)
        #expect(Double(samples.count) / 48000 >= expected, "\(Double(samples.count) / 48000) s of audio, \(expected) s expected")
        if withVideo {
            let video = try #require(feeds.first { $0.kind == "video" })
            #expect(video.file == audio.file, "one file with both tracks: \(feeds.map(\.file))")
            let pictures = try await Audio.videoLuma(out.appendingPathComponent(video.file)).count
            #expect(pictures == video.written && Double(pictures) >= expected * 9, "\(pictures) pictures decoded, \(video.written ?? -1) written")
        } else {
            #expect(abs((Audio.dominantFrequency(samples) ?? 0) - 440) <= 9)
        }
    }
}
}
