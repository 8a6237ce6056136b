import CDirectRTP
import CGStreamer
import GStreamerKit
import Synchronization
import Testing

/// One SRTP key, one owner per SSRC: an SSRC srtpenc has protected is never claimed by the
/// direct sender, and one the direct sender claimed never reaches srtpenc, in whatever order
/// the two paths start (CDirectRTP.h, `sfb_srtp_guard_*`).
@Suite struct SRTPGuardTests {
    init() { GStreamer.initialize() }

    /// appsrc → rtpsession → srtpenc → fakesink, as webrtcbin's send chain; srtpenc's key is set
    /// by hand (webrtcbin's DTLS would set it).
    func chain() throws -> (Pipeline, AppSource, Element, Element, Pad) {
        let key = String(repeating: "2a", count: 30)   // AES-128 + HMAC-SHA1-80: 16 + 14 bytes
        let pipeline = try Pipeline(description: """
            appsrc name=src format=time caps=application/x-rtp,media=audio,clock-rate=48000,encoding-name=OPUS,payload=111 \
            ! session.send_rtp_sink rtpsession name=session session.send_rtp_src ! srtpenc name=enc key=\(key) ! fakesink name=sink async=false
            """)
        return (pipeline, try AppSource(named: "src", in: pipeline), try pipeline.element(named: "enc"),
                try pipeline.element(named: "session"), try pipeline.element(named: "sink").staticPad("sink"))
    }

    static func packet(ssrc: UInt32, seq: UInt16) -> [UInt8] {
        [0x80, 111, UInt8(seq >> 8), UInt8(seq & 0xff), 0, 0, 0, 0,
         UInt8(ssrc >> 24), UInt8(ssrc >> 16 & 0xff), UInt8(ssrc >> 8 & 0xff), UInt8(ssrc & 0xff)] + [UInt8](repeating: 7, count: 40)
    }

    final class Count: Sendable {
        let value = Atomic<Int>(0)
        var now: Int { value.load(ordering: .relaxed) }
    }

    /// Waits (polling, no bound asserted) until `count` reaches `n`; false after 10 s.
    func reach(_ count: Count, _ n: Int) async -> Bool {
        for _ in 0..<1000 where count.now < n { try? await Task.sleep(for: .milliseconds(10)) }
        return count.now >= n
    }

    @Test func anSSRCSrtpencProtectedIsRefusedAndAClaimedOneNeverReachesSrtpenc() async throws {
        let (pipeline, src, enc, session, sinkPad) = try chain()
        let protected = Count()
        let observer = sinkPad.addBufferObserver { _ in protected.value.add(1, ordering: .relaxed) }
        defer { observer.remove() }
        try pipeline.setState(.playing)
        defer { pipeline.setStateQuietly(.null) }

        // srtpenc protects SSRC 1 before any guard exists: rtpsession's counters say so.
        Self.packet(ssrc: 1, seq: 1).withUnsafeBytes { _ = src.push($0, pts: 0) }
        #expect(await reach(protected, 1), "srtpenc protected the first packet")
        let guardian = try #require(sfb_srtp_guard_new(enc.unsafeGstElement.assumingMemoryBound(to: GstElement.self),
                                                       session.unsafeGstElement.assumingMemoryBound(to: GstElement.self)))
        defer { sfb_srtp_guard_unref(guardian) }
        #expect(sfb_srtp_guard_claim(guardian, 1) == 0, "SSRC 1 is srtpenc's: a second context on it is refused")

        // The direct sender claims SSRC 2 first: srtpenc never gets it, whatever comes its way.
        #expect(sfb_srtp_guard_claim(guardian, 2) != 0)
        #expect(sfb_srtp_guard_claim(guardian, 2) != 0, "claiming again is the same owner")
        Self.packet(ssrc: 2, seq: 1).withUnsafeBytes { _ = src.push($0, pts: 20_000_000) }
        // SSRC 3, sent after it through srtpenc, shows SSRC 2's packet had its turn.
        Self.packet(ssrc: 3, seq: 1).withUnsafeBytes { _ = src.push($0, pts: 40_000_000) }
        #expect(await reach(protected, 2), "SSRC 3 went through srtpenc")
        #expect(protected.now == 2, "SSRC 2 never reached srtpenc's output")
        #expect(sfb_srtp_guard_blocked(guardian) == 1)
        #expect(sfb_srtp_guard_claim(guardian, 3) == 0, "SSRC 3 is srtpenc's now")
    }

    @Test func aGuardOnAnUnusedSrtpencLetsTheFirstClaimHaveTheSSRC() throws {
        let (pipeline, _, enc, session, _) = try chain()
        try pipeline.setState(.playing)
        defer { pipeline.setStateQuietly(.null) }
        let guardian = try #require(sfb_srtp_guard_new(enc.unsafeGstElement.assumingMemoryBound(to: GstElement.self),
                                                       session.unsafeGstElement.assumingMemoryBound(to: GstElement.self)))
        defer { sfb_srtp_guard_unref(guardian) }
        #expect(sfb_srtp_guard_claim(guardian, 0xDEAD_BEEF) != 0)
        #expect(sfb_srtp_guard_blocked(guardian) == 0)
    }
}
