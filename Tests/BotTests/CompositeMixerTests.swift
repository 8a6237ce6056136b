import Foundation
import GStreamerKit
import Locking
import Synchronization
import Testing
@testable import Bot
import TestSupport

/// The composite's mixer alone, without Janus: one participant's Opus pushed into a slot as
/// their opened frames would be, the output an HLS folder. What a viewer of the stream would
/// notice: the mix stops while one participant is silent, or their audio goes missing uncounted.
/// In the media scene (one test at a time per lane) though no Janus is needed: they measure
/// audio dropped as late, in real time, and among the ~550 tests run 8 at once one took 88 s
/// and dropped 180 ms (CI).
extension MediaScene {
@Suite(.serialized) struct CompositeMixerTests {
    /// A participant's gap (no frames for 2 s, as when their path is cut; no video at all
    /// here) must not hold the composite back: the mixer and the compositor time out on their
    /// pads and go on at their rates. Before the slots said how much they can buffer, neither
    /// could configure its latency and both waited for every pad, so the stream stopped for as
    /// long as anyone's gap (and then lagged by it).
    @Test func aParticipantsGapDoesNotStopTheComposite() async throws {
        let (mixer, dir) = try await Self.mixer("gap")
        let (heard, probe) = try Self.observe(mixer)
        let slot = try await mixer.add(participant: "1", display: "Ann", video: true)
        let frames = try await Self.toneFrames(count: 100)
        try await Self.push(frames[0..<50], into: slot)
        let gapStart = ContinuousClock.now
        try await Task.sleep(for: .seconds(2))
        let during = heard.all.filter { $0.at > gapStart + .milliseconds(500) }.count
        try await Self.push(frames[50...], into: slot)
        let pictures = mixer.losses.picturesMissing()
        await mixer.finish()
        probe.remove()
        try? FileManager.default.removeItem(at: dir)
        // 1.5 s of the gap at 20 ms a buffer: 75.
        #expect(during >= 50, "the mix made \(during) buffers in 1.5 s of one participant's gap (75 at its rate)")
        #expect(heard.all.contains { $0.power > 0.01 }, "the tone never reached the mix")
        // About 4 s at 25 fps; a loaded machine may miss some.
        #expect(pictures.expected >= 75 && pictures.missing * 4 <= pictures.expected, "pictures: \(pictures.missing) missing of \(pictures.expected)")
        // (No check that nothing was late: frames are stamped as they are pushed here, and on a
        // slow machine (under TSan: 722 ms) decoding them takes longer than the mixer waits.)
    }

    /// A slot's decoding thread held for 700 ms (a starved machine): what the mixer drops as
    /// too late is counted, and the relay's report calls itself incomplete.
    @Test func audioTheMixerDropsAsLateIsCounted() async throws {
        let (mixer, dir) = try await Self.mixer("late")
        let slot = try await mixer.add(participant: "1", display: "Ann", video: false)
        let frames = try await Self.toneFrames(count: 150)
        try await Self.push(frames[0..<25], into: slot)
        let hold = try slot.audio.bin.element(named: "pcm").staticPad("src").addBufferHold()
        try await Self.push(frames[25..<60], into: slot)
        hold.remove()
        try await Self.push(frames[60...], into: slot)
        let counted = await eventually(within: 5) { mixer.losses.lateAudioMilliseconds > 0 }
        await mixer.finish()
        try? FileManager.default.removeItem(at: dir)
        #expect(counted, "a 700 ms stall of the slot's thread, and no late audio counted")
        let lost = RelayLosses.describe(unsent: 0, failures: 0, droppedInOutput: 0, lateAudioMilliseconds: mixer.losses.lateAudioMilliseconds)
        #expect(lost?.contains("ms of participants' audio") == true, "\(lost ?? "complete")")
    }

    // MARK: - Helpers

    struct Heard: Sendable {
        let at: ContinuousClock.Instant
        let power: Double
    }

    /// What a streaming thread collects for the test to read.
    final class Collected<T: Sendable>: Sendable {
        let items = Locked<[T]>([])
        func append(_ item: T) { items.withLock { $0.append(item) } }
        var all: [T] { items.withLock { $0 } }
    }

    static func mixer(_ name: String, play: @escaping @Sendable (Pipeline) throws(GStreamerError) -> Void = { p throws(GStreamerError) in try p.setState(.playing) })
        async throws -> (CompositeMixer, URL) {
        let dir = try Scene.tempDirectory("composite-mixer-\(name)")
        let output = RelayOutput(destination: try RelayDestination("hls:\(dir.path)"), tracks: RelayTracks(audio: true, video: true, pcmAudio: true),
                                 library: try PipelineLibrary(), status: RelayStatus(), logger: Scene.logger)
        let mixer = try await CompositeMixer.start(format: CompositeFormat(width: 320, height: 180), layout: .grid, output: output,
                                                   library: try PipelineLibrary(), logger: Scene.logger, play: play)
        return (mixer, dir)
    }

    /// Every 20 ms of the mix, with its power, as it leaves the mixer.
    static func observe(_ mixer: CompositeMixer) throws -> (Collected<Heard>, PadProbe) {
        let heard = Collected<Heard>()
        let probe = try mixer.pipeline.element(named: "audio_out").staticPad("sink").addBufferObserver { pcm in
            heard.append(Heard(at: .now, power: ActiveSpeaker.power(ofS16: pcm)))
        }
        return (heard, probe)
    }

    /// `count` Opus frames of 20 ms of a 440 Hz tone, as a participant's opened frames are.
    static func toneFrames(count: Int) async throws -> [[UInt8]] {
        let pipeline = try Pipeline(description: "audiotestsrc freq=440 volume=0.5 num-buffers=\(count) samplesperbuffer=960 "
                                    + "! audio/x-raw,rate=48000,channels=2 ! opusenc frame-size=20 ! fakesink name=out")
        let frames = Collected<[UInt8]>()
        let probe = try pipeline.element(named: "out").staticPad("sink").addBufferObserver { bytes in frames.append(Array(bytes)) }
        try await pipeline.runToEnd()
        probe.remove()
        return frames.all
    }

    /// Pushes `frames` at their rate, one every 20 ms.
    static func push(_ frames: ArraySlice<[UInt8]>, into slot: CompositeSlot) async throws {
        let start = ContinuousClock.now
        for (i, frame) in frames.enumerated() {
            frame.withUnsafeBytes { slot.pushAudio($0) }
            try await Task.sleep(until: start + .milliseconds(20 * (i + 1)), clock: .continuous)
        }
    }
}
}
