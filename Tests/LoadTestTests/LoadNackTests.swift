import Bot
import FrameCrypto
import Foundation
import LoadTest
import Testing
import TestSupport

extension MediaScene {
/// NACKs on the direct send path, against the real Janus: with the publishers' video randomly
/// lost on the way to Janus, Janus asks for the lost packets again and the sender resends the
/// very SRTP packets it sent (no RTX), which Janus's libsrtp takes (their index never arrived).
@Suite struct LoadNackTests {
    struct Outcome {
        var completeness: Double
        var nacks: NackCounts
        var dropped: Int
        var decryptFailures: Int
        var text: String {
            String(format: "%.1f %% of video frames complete; %d packets dropped; NACKs %d asking for %d, %d retransmitted, %d no longer held; %d frames failed to open",
                   100 * completeness, dropped, nacks.nacks, nacks.requested, nacks.retransmitted, nacks.unavailable, decryptFailures)
        }
    }

    // `percent` of the publishers' large packets (video) lost on their way to Janus (an iptables
    // rule on this Janus's own RTP ports; nil: none). Subscribers keep their jitter buffers (as a
    // phone does): a retransmission comes out of order, and only a jitter buffer puts it back.
    static func lossyRun(_ janus: OwnJanus, answer: Bool, percent: Double?) async throws -> Outcome {
        var plan = try LoadVideoTests.plan(room: try await Scene.createPermanentRoom(janus.url), publishers: 2, subscribers: 3,
                                           ring: KeyRing(current: .random()), seconds: 10)
        plan.janusURL = janus.url
        plan.plainReceive = false
        plan.answerNACKs = answer
        let planned = plan
        let (result, dropped) = if let percent {
            try await Faults.withUplinkLoss(to: janus.rtpPorts, percent: percent) { try await LoadRun(plan: planned).run() }
        } else { (try await LoadRun(plan: planned).run(), 0) }
        let summary = LoadSummary(result)
        let subs = result.bots.filter { $0.role == .subscriber }
        #expect(subs.count == 3 && subs.allSatisfy { $0.feedsReceiving == 2 }, "\(subs.map { "\($0.display): \($0.feedsReceiving) feeds" })")
        // Audio (small packets) is never dropped: its frames opened say how long each subscriber
        // received, and video should have opened fps/50 as many (a run without loss reads about
        // 86 %, not 100: this measure's own offset, the same in every run).
        let fps = Double(plan.videoSettings.fps)
        let audio = subs.reduce(0) { $0 + $1.framesOpened - $1.videoFramesOpened }, video = subs.reduce(0) { $0 + $1.videoFramesOpened }
        return Outcome(completeness: audio > 0 ? Double(video) / (Double(audio) * fps / 50) : 0,
                       nacks: summary.publishers.nacks ?? NackCounts(), dropped: dropped,
                       decryptFailures: subs.reduce(0) { $0 + $1.decryptFailuresTotal })
    }

    @Test("5 % of the video lost to Janus (and a run without loss for reference): answering its NACKs resends the same SRTP packets, Janus takes them, and subscribers open more complete frames than without")
    func nackUnderLoss() async throws {
        let dir = try Scene.tempDirectory("load-nack")
        try await OwnJanus.with(port: 8247, in: dir, rtpPorts: 14700...14799) { (janus: OwnJanus) async throws -> Void in
            let lossless = try await Self.lossyRun(janus, answer: true, percent: nil)
            let answered = try await Self.lossyRun(janus, answer: true, percent: 5)
            let ignored = try await Self.lossyRun(janus, answer: false, percent: 5)
            print("load nack: no loss: \(lossless.text)")
            print("load nack: answered: \(answered.text)")
            print("load nack: ignored: \(ignored.text)")
            // About 60 expected in each run (5 % of the packets of 400 bytes or more).
            #expect(answered.dropped > 20 && ignored.dropped > 20, "the rule dropped video: \(answered.dropped), \(ignored.dropped)")
            // Janus asked both times; only the answering senders sent packets again.
            #expect(answered.nacks.nacks > 0 && answered.nacks.retransmitted > 0, "answered: \(answered.text)")
            #expect(ignored.nacks.nacks > 0 && ignored.nacks.retransmitted == 0, "ignored: \(ignored.text)")
            // Every loss is a few ms old when Janus asks: the history (64 KiB) still holds it.
            #expect(answered.nacks.unavailable * 10 <= answered.nacks.requested, "answered: \(answered.text)")
            #expect(answered.completeness > ignored.completeness, "answered: \(answered.text); ignored: \(ignored.text)")
        }
    }
}
}
