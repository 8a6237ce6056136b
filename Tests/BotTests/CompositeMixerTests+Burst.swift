import Foundation
import GStreamerKit
import Testing
@testable import Bot
import TestSupport

extension MediaScene.CompositeMixerTests {
    /// A participant's frames held up by a stall of the receiving side come all at once, with
    /// one and the same capture time (the jitter buffer's output never goes back): all of them
    /// are mixed, none dropped as late. Seen in a relay on a loaded machine: 20 frames in a row
    /// stamped alike, all but two dropped (3.3 s of two participants in 18 s, exit 74).
    @Test func aBurstWithOneCaptureTimeIsMixedWhole() async throws {
        let (mixer, dir) = try await Self.mixer("burst")
        let (heard, probe) = try Self.observe(mixer)
        let slot = try await mixer.add(participant: "1", display: "Ann", video: false)
        let frames = try await Self.toneFrames(count: 100)
        let clock: @Sendable () -> UInt64 = { [pipeline = mixer.pipeline] in pipeline.baseTime + (pipeline.runningTime ?? 0) }
        // 1 s at their rate, each with its capture time; 0.5 s held up, then handed on at once
        // with the capture time of the first of them; the last 0.5 s at their rate again.
        try await Self.push(frames[0..<50], into: slot, clock: clock)
        let stalled = clock()
        try await Task.sleep(for: .milliseconds(500))
        for frame in frames[50..<75] { frame.withUnsafeBytes { slot.pushAudio($0, clockTime: stalled) } }
        try await Self.push(frames[75...], into: slot, clock: clock)
        let mixed = await eventually(within: 3) { heard.all.filter { $0.power > 0.01 }.count >= 95 }
        let (tone, late) = (heard.all.filter { $0.power > 0.01 }.count, mixer.losses.lateAudioMilliseconds)
        await mixer.finish()
        probe.remove()
        try? FileManager.default.removeItem(at: dir)
        // A frame or two can come late on a machine busy with other tests (40 ms once, with 8
        // test processes at once); what this guards against dropped 440 ms.
        #expect(late <= 100, "\(late) ms of the participant's audio dropped as late")
        #expect(mixed, "\(tone) of the 100 tone frames' 20 ms reached the mix")
    }

    /// How long an Opus packet plays, from its TOC (RFC 6716 §3.1): where the slot lays the next.
    @Test func opusDurationsFromTheTOC() {
        func duration(_ bytes: [UInt8]) -> Int64? { bytes.withUnsafeBytes { CompositeSlot.opusDuration($0) } }
        #expect(duration([0xF8, 0]) == 20_000_000, "CELT fullband 20 ms, one frame (opusenc's default)")
        #expect(duration([0x18]) == 60_000_000, "SILK 60 ms")
        #expect(duration([0x69, 0]) == 40_000_000, "hybrid 20 ms, two frames")
        #expect(duration([0x83, 0x03]) == 7_500_000, "CELT 2.5 ms, three frames (code 3)")
        #expect(duration([0x83]) == nil && duration([]) == nil, "too short to say")
        #expect(duration([0x83, 0x00]) == nil, "code 3 with no frame is not a packet")
    }

    /// Pushes `frames` at their rate, each with the clock's time as its capture time.
    static func push(_ frames: ArraySlice<[UInt8]>, into slot: CompositeSlot, clock: @Sendable () -> UInt64) async throws {
        let start = ContinuousClock.now
        for (i, frame) in frames.enumerated() {
            frame.withUnsafeBytes { slot.pushAudio($0, clockTime: clock()) }
            try await Task.sleep(until: start + .milliseconds(20 * (i + 1)), clock: .continuous)
        }
    }
}
