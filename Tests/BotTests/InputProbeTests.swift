import Foundation
import GStreamerKit
import Testing
@testable import Bot
import TestSupport

/// The probe's decisions on files made here, with no Janus.
@Suite struct InputProbeTests {
    @Test("a WAV whose header says 0 data bytes but holds 1 s of them (a writer that never fixed the header) is accepted")
    func zeroDeclaredWithDataIsAccepted() throws {
        let dir = try Scene.tempDirectory("probe")
        let file = dir.appendingPathComponent("unfixed.wav")
        try MediaScene.PlayInputTests.wav(rate: 48000, dataBytes: 0, data: Data(count: 192_000)).write(to: file)
        #expect(WAVHeader(file.path)?.problem == nil)
        let info = try InputProbe.checkBlocking(file.path)
        #expect(info.hasAudio)
    }

    @Test("two Ogg files concatenated are chained; one Ogg, or a WAV, is not")
    func chainedOggIsTold() async throws {
        let dir = try Scene.tempDirectory("probe-ogg")
        let one = dir.appendingPathComponent("one.ogg")
        try await runToEnd("audiotestsrc num-buffers=20 ! audio/x-raw,rate=44100,channels=1 ! vorbisenc ! oggmux ! filesink location=\"\(one.path)\"", limit: .seconds(30))
        let two = dir.appendingPathComponent("two.ogg")
        try (try Data(contentsOf: one) + Data(contentsOf: one)).write(to: two)
        let wav = dir.appendingPathComponent("x.wav")
        try MediaScene.PlayInputTests.wav(rate: 48000, dataBytes: 4, data: Data(count: 4)).write(to: wav)
        #expect(!InputProbe.isChainedOgg(one.path))
        #expect(InputProbe.isChainedOgg(two.path))
        #expect(!InputProbe.isChainedOgg(wav.path))
    }
}
