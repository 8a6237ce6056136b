import Foundation
import FrameCrypto
import GStreamerKit
@testable import Bot
@testable import Janus
import Testing
import TestSupport

/// The recorder's branches driven in the orders a loaded machine produces, with no Janus: a
/// pipeline that never runs, so a branch handed over to be finished stays in it (as one being
/// finished off-thread does), and a tee's pads standing in for webrtcbin's.
@Suite struct FeedBranchesTests {
    init() { GStreamer.initialize() }

    struct Stage {
        let pipeline: Pipeline, source: Bin, branches: FeedBranches, dir: URL, mix: CallMix?

        init(_ name: String, mix: Bool = false) throws {
            dir = try Scene.tempDirectory(name)
            pipeline = try Pipeline(description: "fakesink name=unused")
            source = try pipeline.addBin(description: "tee name=t", name: "webrtc")
            let library = try PipelineLibrary()
            self.mix = mix ? try CallMix(file: RecordingFile(dir.appendingPathComponent("mix.opus")), pipeline: pipeline, library: library) : nil
            let config = BotConfig(janusURL: "fake://janus", room: 1, display: "9:Rec", protection: .e2ee(KeyRing(current: .random())),
                                   pipelines: library, logger: Scene.logger)
            branches = FeedBranches(config: config, folder: RecordingFolder(dir), logger: Scene.logger)
        }

        /// A new pad, as webrtcbin's pad-added gives one.
        func newPad(mid: String) throws {
            branches.attach(pad: try source.exposeRequestPad(of: "t", template: "src_%u"), mid: mid, pipeline: pipeline, mix: mix)
        }

        /// A negotiation whose offer says `feed` is on `mid`.
        func negotiated(_ feed: Int64, mid: String) {
            branches.learn([SubscribedStream(mid: mid, feedID: feed, feedDisplay: "1:Ann", type: "audio", active: true)])
            branches.reattachReused(pipeline: pipeline, mix: mix)
        }

        var files: [String] { ((try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []).sorted() }
        var errors: [String] { branches.errors.map(\.error) }
    }

    /// The benchmark's "cannot add bin feed-…-6": Janus's offer made before a publisher left
    /// (another publisher's change) is negotiated after the leave detached its branch, and still
    /// says the mid carries that feed.
    @Test func anOfferFromBeforeALeaveGivesTheFeedNoSecondBranch() throws {
        let s = try Stage("staleoffer")
        s.negotiated(7, mid: "6")
        try s.newPad(mid: "6")
        #expect(s.branches.liveEntries.map(\.feedID) == [7])
        let leaving = s.branches.detach(feed: 7)
        #expect(leaving.count == 1)

        s.negotiated(7, mid: "6")
        #expect(s.branches.liveEntries.isEmpty, "a feed that left is not recorded again")
        #expect(s.errors.isEmpty, "\(s.errors)")
        #expect(s.files == ["7-1.opus"])
    }

    /// A pad for the departed feed's mid that appears after the leave (a new SSRC, packets held
    /// for lip sync let go late) gets a discard branch, not a recording.
    @Test func aPadAfterALeaveGivesTheFeedNoSecondBranch() throws {
        let s = try Stage("latepad")
        s.negotiated(7, mid: "6")
        try s.newPad(mid: "6")
        _ = s.branches.detach(feed: 7)

        try s.newPad(mid: "6")
        #expect(s.branches.liveEntries.isEmpty, "a feed that left is not recorded again")
        #expect(s.errors.isEmpty, "\(s.errors)")
        #expect((try? s.pipeline.element(named: "discard-6")) != nil, "the new pad needs a sink")
        #expect(s.files == ["7-1.opus"])
    }

    /// A publisher who truly comes back under the same feed id (subscribed again) is recorded
    /// again, in a new file and on a branch whose name cannot clash with the one still being finished.
    @Test func aFeedThatComesBackGetsABranchBesideTheOneBeingFinished() throws {
        let s = try Stage("comeback")
        s.negotiated(7, mid: "6")
        try s.newPad(mid: "6")
        _ = s.branches.detach(feed: 7)

        s.branches.admit([7])
        s.negotiated(7, mid: "6")
        #expect(s.branches.liveEntries.map(\.feedID) == [7])
        #expect(s.errors.isEmpty, "\(s.errors)")
        #expect((try? s.pipeline.element(named: "feed-7-6")) != nil && (try? s.pipeline.element(named: "feed-7-6-2")) != nil)
        #expect(s.files == ["7-1-2.opus", "7-1.opus"])
    }

    /// `record --mix`: a mixer that does not take in a leaving feed's end (here: it never runs)
    /// lost what its pad held. A loss in the manifest's errors, against the mix file and the feed.
    @Test func aMixThatDoesNotDrainAFeedIsALoss() async throws {
        let s = try Stage("mixstuck", mix: true)
        s.negotiated(7, mid: "6")
        try s.newPad(mid: "6")
        for r in s.branches.detach(feed: 7) { await r.finish(in: s.pipeline, timeout: .milliseconds(200)) }

        let errors = s.branches.errors
        #expect(errors.count == 1 && errors.first?.feedID == 7 && errors.first?.file == s.dir.appendingPathComponent("mix.opus").path,
                "\(errors)")
        #expect(errors.first?.error.contains("did not take in the end of feed 7's audio") == true, "\(s.errors)")
    }

    /// A mix that failed was said once already: its inputs not draining is no further loss.
    @Test func aFailedMixThatDoesNotDrainIsNotSaidAgain() async throws {
        let s = try Stage("mixfailed", mix: true)
        s.negotiated(7, mid: "6")
        try s.newPad(mid: "6")
        _ = s.mix?.markFailed()
        for r in s.branches.detach(feed: 7) { await r.finish(in: s.pipeline, timeout: .milliseconds(200)) }
        #expect(s.errors.isEmpty, "\(s.errors)")
    }
}
