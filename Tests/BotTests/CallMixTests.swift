internal import CGStreamer
import Foundation
@testable import GStreamerKit
import Locking
import Synchronization
import Testing
@testable import Bot
import TestSupport

/// `record --mix`'s mixer alone, without Janus: the subscriber pipeline (webrtcbin) playing, the
/// mix added to it as the recorder adds it, and one publisher's decrypted Opus pushed into a
/// feed's `split` tee. In the media scene (one test at a time per lane) though no Janus is
/// needed: they measure audio dropped as late, in real time.
extension MediaScene {
@Suite(.serialized) struct CallMixTests {
    /// A publisher who joins mid-call with their first frames held 2 s (lip sync on the direct
    /// path: up to 2 s), on a machine that was slow to start the mix: all of it is mixed, the mix
    /// its delay behind the clock. The silence's queue counted its 2.5 s from running time 0, not
    /// from its first buffer: the silence begun 1 s late left the mix 1.5-1.8 s behind for the
    /// whole call and 217-511 ms of the publisher dropped as late (6 of 6 runs; started at once,
    /// and now: 2.48 s behind, none dropped).
    @Test func aSlowStartLeavesTheMixItsWholeDelay() async throws {
        let s = try Stage("slow-start", start: Self.slowly)
        let frames = try await MediaScene.CompositeMixerTests.toneFrames(count: 100)
        let flowing = await eventually(within: 5) { s.leadMilliseconds != .max }
        try await s.push(frames[...], into: try s.join(), heldFor: 2_000_000_000)
        let mixed = await eventually(within: 5) { s.toneMilliseconds >= 1900 }
        let (tone, late, lead) = (s.toneMilliseconds, s.lateMilliseconds, s.leadMilliseconds)
        await s.stop()
        #expect(flowing, "the mix made nothing in 5 s")
        #expect(late <= 100, "\(late) ms of the publisher's audio dropped as late")
        #expect(mixed, "\(tone) ms of the 2000 ms tone reached the mix")
        // 2.5 s, less a frame or two of a busy machine.
        #expect(lead <= -2400, "the mix ran only \(-lead) ms behind the clock (its delay: \(s.mix.delay))")
    }

    /// A publisher's audio that comes later than the mix's delay (here held 4 s, the mix 2.5 s
    /// behind): what the mixer drops of it is counted for that input (the recorder then says it
    /// in `errors`, the losses metric and exit 74), not dropped silently as before. The mixer
    /// clips the first frame and lays the rest after it (measured: 10 ms dropped, the tone mixed
    /// 1.5 s late); nothing asked it to post what it dropped.
    @Test func audioLaterThanTheDelayIsCountedAsLost() async throws {
        let s = try Stage("late", start: { $0.syncStateWithParent() })
        let frames = try await MediaScene.CompositeMixerTests.toneFrames(count: 100)
        _ = await eventually(within: 5) { s.leadMilliseconds != .max }
        try await s.push(frames[...], into: try s.join(), heldFor: 4_000_000_000)
        let counted = await eventually(within: 5) { s.lateMilliseconds > 0 }
        let mixed = await eventually(within: 5) { s.toneMilliseconds >= 1900 }
        let (late, tone) = (s.lateMilliseconds, s.toneMilliseconds)
        await s.stop()
        print("call mix, a publisher's audio 1.5 s later than the delay: \(late) ms counted as dropped late, \(tone) ms of the tone mixed")
        #expect(counted && late <= 2000, "\(late) ms of the publisher's audio counted as dropped late")
        #expect(mixed, "\(tone) ms of the 2000 ms tone reached the mix")
    }

    /// The mix's branch started as a starved machine may get it there: the sinks playing while
    /// the mixer and its live silence, given the clock and their base time (a bin sets a child's
    /// base time before its state change, locked or not), start up and only 1 s later play.
    static func slowly(_ bin: Bin) -> Bool {
        guard let held = try? ["mix", "silence"].map({ name throws(GStreamerError) in try bin.element(named: name) }) else { return false }
        for element in held { gst_element_set_locked_state(element.pointer, 1) }
        guard bin.syncStateWithParent() else { return false }
        for element in held { _ = gst_element_set_state(element.pointer, Pipeline.State.paused.gst) }
        Thread.sleep(forTimeInterval: 1)
        for element in held {
            gst_element_set_locked_state(element.pointer, 0)
            guard element.syncStateWithParent() else { return false }
        }
        return true
    }

    /// What the streaming threads saw: tone samples and the mixer's greatest lead over the clock
    /// (ms); the participant's way into the mix.
    final class Tally: Sendable {
        let heard = Locked<(toneSamples: Int, lead: Int64?)>((0, nil))
        let input = Locked<CallMix.Input?>(nil)
    }

    /// The subscriber pipeline (webrtcbin) playing with the mix in it, and what leaves the mixer.
    final class Stage: Sendable {
        let pipeline: Pipeline, mix: CallMix, dir: URL
        private let library: PipelineLibrary
        private let probe: PadProbe
        private let tally = Tally()
        private let watch: Task<Void, Never>

        init(_ name: String, start: (Bin) -> Bool) throws {
            dir = try Scene.tempDirectory("call-mix-\(name)")
            library = try PipelineLibrary()
            pipeline = try Pipeline(description: try library.description("subscribe"))
            let messages = pipeline.bus.messages()
            try pipeline.setState(.playing)
            mix = try CallMix(file: RecordingFile(dir.appendingPathComponent("mix.opus")), pipeline: pipeline, library: library, start: start)
            let (pipeline, tally) = (pipeline, tally)
            // As the recorder's bus loop does: the mixer's QoS messages go to the mix's count.
            watch = Task { [mix] in
                for await m in messages {
                    guard case .qos(let source, _, _, let dropped) = m else { continue }
                    mix.qos(source: source, dropped: dropped)
                }
            }
            probe = try mix.bin.element(named: "mix").staticPad("src").addRunningTimeObserver { pcm, running, _ in
                guard let running, let now = pipeline.runningTime else { return }
                let tone = ActiveSpeaker.power(ofS16: pcm) > 0.01 ? pcm.count / 4 : 0
                let lead = (Int64(running) - Int64(now)) / 1_000_000
                tally.heard.withLock { $0 = ($0.toneSamples + tone, max($0.lead ?? .min, lead)) }
            }
        }

        /// A publisher's audio branch, its decrypted frames fed from Swift, joined to the mix as
        /// the recorder joins one when webrtcbin's pad for it appears.
        func join() throws -> AppSource {
            let feed = try pipeline.addBin(description: "appsrc name=src is-live=true format=time min-latency=0 max-latency=-1 "
                                           + "caps=audio/x-opus,channel-mapping-family=0,channels=2,rate=48000 "
                                           + "! tee name=split ! fakesink sync=false async=false", name: "feed-1-0")
            let source = try AppSource(named: "src", in: feed)
            _ = feed.syncStateWithParent()
            let input = try mix.add(from: feed, in: pipeline)
            tally.input.withLock { $0 = input }
            return source
        }

        /// Pushes `frames` at their rate, one every 20 ms, each stamped `held` ns before its push.
        func push(_ frames: ArraySlice<[UInt8]>, into source: AppSource, heldFor offset: UInt64) async throws {
            let start = ContinuousClock.now
            for (i, frame) in frames.enumerated() {
                let now = pipeline.runningTime ?? 0
                frame.withUnsafeBytes { _ = source.push($0, pts: max(now, offset) - offset) }
                try await Task.sleep(until: start + .milliseconds(20 * (i + 1)), clock: .continuous)
            }
        }

        /// Tone (not silence) the mixer put out so far.
        var toneMilliseconds: Int { tally.heard.withLock { $0.toneSamples / 48 } }
        /// The participant's audio the mixer dropped as late.
        var lateMilliseconds: Int { tally.input.withLock { $0 }.map { mix.lateMilliseconds(of: $0) } ?? 0 }
        /// How far the mixer's output ran ahead of the clock at most (negative: behind).
        var leadMilliseconds: Int64 { tally.heard.withLock { $0.lead ?? .max } }

        func stop() async {
            probe.remove()
            watch.cancel()
            await pipeline.stop()
            try? FileManager.default.removeItem(at: dir)
        }
    }
}
}
