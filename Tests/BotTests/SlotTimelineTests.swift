import Testing
@testable import Bot

/// Where a composite slot puts a participant's audio: end to end through jitter, again at the
/// arrival after a gap, and never drifting more than `ahead` from the arrivals.
@Suite struct SlotTimelineTests {
    static let ms: UInt64 = 1_000_000

    @Test func jitterKeepsFramesEndToEnd() {
        var t = SlotTimeline()
        let jitter: [UInt64] = [0, 35, 5, 60, 10, 0, 45, 15]
        let placed = (0..<200).map { i in t.place(arrival: 1000 * Self.ms + UInt64(i) * 20 * Self.ms + jitter[i % jitter.count] * Self.ms, duration: 20 * Self.ms) }
        #expect(placed == (0..<200).map { 1000 * Self.ms + UInt64($0) * 20 * Self.ms }, "end to end from the first arrival")
        #expect(t.restarts == 1)
    }

    @Test func aGapStartsAgainAtTheArrival() {
        var t = SlotTimeline()
        for i in 0..<10 { _ = t.place(arrival: UInt64(i) * 20 * Self.ms, duration: 20 * Self.ms) }
        // 3 s without frames (a cut): the next goes where it arrived, not after the last.
        #expect(t.place(arrival: 3200 * Self.ms, duration: 20 * Self.ms) == 3200 * Self.ms)
        #expect(t.place(arrival: 3215 * Self.ms, duration: 20 * Self.ms) == 3220 * Self.ms)
        #expect(t.restarts == 2)
    }

    @Test func aBurstAfterAStallIsLaterNotDropped() {
        var t = SlotTimeline()
        for i in 0..<10 { _ = t.place(arrival: UInt64(i) * 20 * Self.ms, duration: 20 * Self.ms) }
        // 300 ms stalled, then 15 frames at once: laid end to end, none placed twice.
        let burst = (0..<15).map { _ in t.place(arrival: 500 * Self.ms, duration: 20 * Self.ms) }
        #expect(burst == (0..<15).map { 500 * Self.ms + UInt64($0) * 20 * Self.ms })
    }

    @Test func aFastSenderIsCaughtUpWithAfterHalfASecond() {
        var t = SlotTimeline()
        // 20 ms frames every 19 ms: the timeline runs ahead of the arrivals by 1 ms a frame.
        var restartedAt: Int?
        for i in 0..<600 {
            _ = t.place(arrival: UInt64(i) * 19 * Self.ms, duration: 20 * Self.ms)
            if t.restarts == 2, restartedAt == nil { restartedAt = i }
        }
        #expect(restartedAt.map { (490...510).contains($0) } == true, "\(String(describing: restartedAt))")
    }

    @Test func opusDurationsFromTheTOC() {
        func duration(_ bytes: [UInt8]) -> UInt64 { bytes.withUnsafeBytes { SlotTimeline.opusDuration($0) } / Self.ms }
        #expect(duration([31 << 3, 0]) == 20)          // CELT FB 20 ms, one frame
        #expect(duration([(31 << 3) | 4]) == 20)       // the stereo bit changes nothing
        #expect(duration([3 << 3, 0]) == 60)           // SILK NB 60 ms
        #expect(duration([(15 << 3) | 1, 0]) == 40)    // hybrid FB 20 ms, two frames
        #expect(duration([(30 << 3) | 3, 3]) == 30)    // CELT FB 10 ms, three frames (code 3)
        #expect(duration([]) == 20)                     // nothing to read: 20 ms
    }
}
