internal import CGStreamer
import Foundation
@testable import GStreamerKit
import Testing
@testable import Bot
import TestSupport

extension MediaScene.CompositeMixerTests {
    /// A participant whose first audio comes in the composite's first seconds, on a machine that
    /// was slow to start it: all of it is mixed, none dropped as late. A bin goes to PLAYING
    /// from its sinks up, giving every element the clock first and each its base time only at
    /// its turn; a live aggregator that has the clock and not yet its base time (0) finds every
    /// clock wait long past and mixes ahead as fast as it can, into sinks already playing. Seen
    /// in a relay under test load: the mix 2.5 s ahead of the clock from its start, and the
    /// first 130 ms of a participant who came 2.4 s later dropped as late (exit 74). Here the
    /// mixers and their live sources get their turn 1 s late.
    @Test func aSlowStartDoesNotPutTheMixAheadOfItsParticipants() async throws {
        let (mixer, dir) = try await Self.mixer("slow-start", play: Self.slowly)
        let (heard, probe) = try Self.observe(mixer)
        let pictures = Collected<ContinuousClock.Instant>()
        let pictureProbe = try mixer.pipeline.element(named: "video_out").staticPad("sink").addBufferObserver { _ in pictures.append(.now) }
        let slot = try await mixer.add(participant: "1", display: "Ann", video: false)
        let frames = try await Self.toneFrames(count: 100)
        let pushed = ContinuousClock.now
        try await Self.push(frames[...], into: slot)
        // The compositor the same: its pictures at its rate (25 fps) while the tone is pushed.
        let made = pictures.all.filter { $0 > pushed && $0 < pushed + .seconds(2) }.count
        // 2 s of tone, 100 buffers of 20 ms (the first and last may be shared with silence).
        let mixed = await eventually(within: 3) { heard.all.filter { $0.power > 0.01 }.count >= 95 }
        let (tone, late) = (heard.all.filter { $0.power > 0.01 }.count, mixer.losses.lateAudioMilliseconds)
        await mixer.finish()
        probe.remove()
        pictureProbe.remove()
        try? FileManager.default.removeItem(at: dir)
        // A frame or two can come late on a machine busy with other tests (40 ms once, with 8
        // test processes at once); what this guards against dropped 2020 ms.
        #expect(late <= 100, "\(late) ms of the participant's audio dropped as late")
        #expect(mixed, "\(tone) of the 100 tone frames' 20 ms reached the mix")
        #expect(made >= 25, "\(made) pictures made in 2 s (50 at the composite's rate)")
    }

    /// PLAYING as a starved machine's bin may get there: the clock given to every element and
    /// the sinks playing while the mixers and their live sources, still without their base
    /// time, start up (negotiate) and only 1 s later get it and play (downstream first, as the
    /// bin does). Their start-up is what wakes an aggregator's thread with the clock in hand.
    static func slowly(_ pipeline: Pipeline) throws(GStreamerError) {
        let held = try ["amix", "vmix", "silence", "background"].map { name throws(GStreamerError) in try pipeline.element(named: name) }
        for element in held { gst_element_set_locked_state(element.pointer, 1) }
        try pipeline.setState(.playing)
        // (A failure shows below: the element does not follow the pipeline to PLAYING.)
        for element in held {
            gst_element_set_base_time(element.pointer, 0)  // the pipeline's PLAYING gave it, locked or not
            _ = gst_element_set_state(element.pointer, Pipeline.State.paused.gst)
        }
        Thread.sleep(forTimeInterval: 1)
        for element in held {
            gst_element_set_locked_state(element.pointer, 0)
            gst_element_set_base_time(element.pointer, gst_element_get_base_time(pipeline.pointer))
            guard element.syncStateWithParent() else { throw .stateChange("\(element.name) did not start") }
        }
    }
}
