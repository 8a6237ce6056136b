import CGStreamerShims
import Testing

/// sfbreorder's sequence logic (CGStreamerShims/reorder_ring.c) with crafted sequence numbers:
/// what goes out, in which order, what is asked for again, and what is given up and counted.
@Suite struct ReorderRingTests {
    /// One step's outputs, written as "e5" (emit 5), "l4x2" (2 lost from 4), "d7" (drop 7), "r4" (ask for 4).
    final class Ring {
        let ring: OpaquePointer
        var out: [SfbReorderOut]
        var policy = SfbReorderPolicy(give_up_after: 100, retry_after: 20, max_tries: 3, request: 1)

        init(capacity: UInt32 = 16) {
            ring = sfb_reorder_ring_new(capacity)
            out = Array(repeating: SfbReorderOut(), count: Int(sfb_reorder_ring_out_capacity(ring)))
        }
        deinit { sfb_reorder_ring_free(ring, nil) }

        func push(_ seq: UInt16, at now: UInt) -> [String] {
            // The item is the sequence number + 1 (a packet is never NULL).
            let n = out.withUnsafeMutableBufferPointer { buffer in
                sfb_reorder_ring_push(ring, seq, now, UnsafeMutableRawPointer(bitPattern: Int(seq) + 1), &policy, buffer.baseAddress)
            }
            return out.prefix(Int(n)).map(Self.text)
        }

        func flush() -> [String] {
            let n = out.withUnsafeMutableBufferPointer { sfb_reorder_ring_flush(ring, $0.baseAddress) }
            return out.prefix(Int(n)).map(Self.text)
        }

        var counts: SfbReorderCounts { sfb_reorder_ring_counts(ring) }

        static func text(_ o: SfbReorderOut) -> String {
            let seq = UInt16(truncatingIfNeeded: o.seq)
            switch o.kind {
            case SFB_REORDER_EMIT: return "e\(Int(bitPattern: o.item) - 1)"
            case SFB_REORDER_DROP: return "d\(Int(bitPattern: o.item) - 1)"
            case SFB_REORDER_LOST: return "l\(seq)x\(o.count)"
            default: return "r\(seq)"
            }
        }
    }

    @Test func inOrderPacketsGoOutAtOnceAcrossTheWrap() {
        let r = Ring()
        #expect(r.push(65534, at: 0) == ["e65534"])
        #expect(r.push(65535, at: 20) == ["e65535"])
        #expect(r.push(0, at: 40) == ["e0"])
        #expect(r.push(1, at: 60) == ["e1"])
        #expect(r.counts.pushed == 4 && r.counts.lost == 0 && sfb_reorder_ring_held(r.ring) == 0)
    }

    @Test func aGapIsAskedForHeldBehindAndFilledLateAcrossTheWrap() {
        let r = Ring()
        #expect(r.push(65534, at: 0) == ["e65534"])
        #expect(r.push(1, at: 10) == ["r65535", "r0"])
        #expect(r.push(2, at: 20) == [])
        #expect(r.push(3, at: 30) == ["r65535", "r0"], "asked again once retry_after passed")
        #expect(r.push(0, at: 35) == [])
        #expect(r.push(65535, at: 40) == ["e65535", "e0", "e1", "e2", "e3"])
        #expect(r.counts.repaired == 2 && r.counts.requests == 4 && r.counts.lost == 0)
    }

    @Test func aGapOlderThanTheBoundIsGivenUpAtTheNextArrivalAndCounted() {
        let r = Ring()
        #expect(r.push(10, at: 0) == ["e10"])
        #expect(r.push(13, at: 20) == ["r11", "r12"])
        #expect(r.push(14, at: 119) == ["r11", "r12"])
        #expect(r.push(15, at: 120) == ["l11x2", "e13", "e14", "e15"], "100 after the gap was seen")
        #expect(r.push(11, at: 130) == ["d11"], "too late: it stays a loss")
        #expect(r.counts.lost == 2 && r.counts.late == 1 && r.counts.pushed == 4)
    }

    @Test func withoutRetransmissionNothingIsAskedFor() {
        let r = Ring()
        r.policy.request = 0
        #expect(r.push(1, at: 0) == ["e1"])
        #expect(r.push(3, at: 1) == [])
        #expect(r.push(4, at: 50) == [])
        #expect(r.push(2, at: 60) == ["e2", "e3", "e4"])
        #expect(r.counts.requests == 0 && r.counts.repaired == 0)
    }

    @Test func duplicatesAreDroppedAndCounted() {
        let r = Ring()
        #expect(r.push(1, at: 0) == ["e1"])
        #expect(r.push(3, at: 1) == ["r2"])
        #expect(r.push(3, at: 2) == ["d3"])
        #expect(r.push(1, at: 3) == ["d1"])
        #expect(r.counts.duplicates == 1 && r.counts.late == 1)
    }

    @Test func aJumpPastTheRingGivesUpTheOldestGapsAndCountsEveryPacketSkipped() {
        let r = Ring(capacity: 16)
        r.policy.request = 0
        #expect(r.push(0, at: 0) == ["e0"])
        #expect(r.push(2, at: 1) == [])
        #expect(r.push(40, at: 2) == ["l1x1", "e2", "l3x22"], "the window now starts at 25")
        #expect(r.push(25, at: 3) == ["e25"])
        #expect(r.counts.lost == 23 && sfb_reorder_ring_held(r.ring) == 1)
        #expect(r.flush() == ["l26x14", "e40"])
        #expect(r.counts.lost == 37)
    }

    @Test func aStreamThatStartsAgainFarAwayIsFollowedAfterThreePackets() {
        let r = Ring()
        #expect(r.push(100, at: 0) == ["e100"])
        #expect(r.push(30000, at: 1) == ["d30000"])
        #expect(r.push(30001, at: 2) == ["d30001"])
        #expect(r.push(30002, at: 3) == ["e30002"])
        #expect(r.push(30003, at: 4) == ["e30003"])
        #expect(r.counts.resyncs == 1 && r.counts.lost == 0 && r.counts.late == 2)
    }

    @Test func aCapacityThatIsNotAPowerOfTwoIsRefused() {
        #expect(sfb_reorder_ring_new(100) == nil && sfb_reorder_ring_new(8) == nil)
    }
}
