import CDirectRTP
import CGStreamer
import Testing

/// What the direct path answers NACKs with (rtp_parse.c, sent_history.c): which packets an RTCP
/// generic NACK asks for, and the history of protected packets they are sent again from.
@Suite struct NackTests {
    static func be(_ v: UInt32) -> [UInt8] { KeyframeParserTests.be(v) }

    /// A generic NACK (RTPFB, FMT 1) from `1` about `media`, one FCI entry per (PID, BLP).
    static func nack(_ media: UInt32, _ entries: [(UInt16, UInt16)]) -> [UInt8] {
        let length = UInt8(2 + entries.count)   // 32-bit words after the first, minus one
        return [0x81, 205, 0, length] + be(1) + be(media)
            + entries.flatMap { [UInt8($0.0 >> 8), UInt8($0.0 & 0xff), UInt8($0.1 >> 8), UInt8($0.1 & 0xff)] }
    }

    func nacked(_ p: [UInt8], _ ssrc: UInt32, capacity: Int = 64) -> (seqs: [UInt16], count: Int, messages: Int) {
        var seqs = [UInt16](repeating: 0, count: capacity)
        var messages: guint = 0
        let count = p.withUnsafeBufferPointer { b in
            seqs.withUnsafeMutableBufferPointer { Int(sfb_rtcp_nacked(b.baseAddress, gsize(b.count), ssrc, $0.baseAddress, guint(capacity), &messages)) }
        }
        return (Array(seqs.prefix(min(count, capacity))), count, Int(messages))
    }

    @Test("a NACK's PID and BLP bits (LSB = PID+1) name the lost packets, across the sequence wrap; others' NACKs, PLIs and truncated ones name none")
    func parse() {
        let ours: UInt32 = 0x1234_5678, theirs: UInt32 = 0x0BAD_F00D
        let rr: [UInt8] = [0x80, 201, 0, 1] + Self.be(1)
        #expect(nacked(Self.nack(ours, [(100, 0)]), ours).seqs == [100])
        #expect(nacked(Self.nack(ours, [(100, 0b101)]), ours).seqs == [100, 101, 103])
        #expect(nacked(Self.nack(ours, [(65535, 0x8001)]), ours).seqs == [65535, 0, 15])
        let two = nacked(rr + Self.nack(ours, [(7, 0), (40, 0xffff)]) + Self.nack(ours, [(9, 0)]), ours)
        #expect(two.seqs == [7] + (40...56).map { UInt16($0) } + [9] && two.messages == 2)
        #expect(nacked(rr + Self.nack(theirs, [(100, 0)]), ours).count == 0)
        let pli: [UInt8] = [0x81, 206, 0, 2] + Self.be(1) + Self.be(ours)
        #expect(nacked(pli, ours).count == 0 && nacked(pli, ours).messages == 0)
        #expect(nacked(Array(Self.nack(ours, [(100, 0)]).dropLast()), ours).count == 0)
        // More than fit: all counted, the first `capacity` written.
        let many = nacked(Self.nack(ours, [(0, 0xffff), (100, 0xffff)]), ours, capacity: 20)
        #expect(many.count == 34 && many.seqs == (0...16).map { UInt16($0) } + [100, 101, 102])
    }

    @Test("the history gives back the very bytes kept under a sequence number, across its wrap, until newer packets write over them")
    func history() throws {
        let h = try #require(sfb_sent_history_new(8192, 64))
        defer { sfb_sent_history_free(h) }
        func packet(_ seq: UInt16) -> [UInt8] { (0..<(200 + Int(seq % 7) * 150)).map { UInt8(truncatingIfNeeded: Int(seq) &* 31 &+ $0) } }
        func find(_ seq: UInt16) -> [UInt8]? {
            var len: gsize = 0
            guard let p = sfb_sent_history_find(h, seq, &len) else { return nil }
            return Array(UnsafeBufferPointer(start: p, count: Int(len)))
        }
        #expect(find(0) == nil)
        // 200 packets from 65500 on: the sequence number wraps at 65535.
        var seq: UInt16 = 65500
        var kept: [UInt16] = []
        for _ in 0..<200 {
            let p = packet(seq)
            p.withUnsafeBufferPointer { sfb_sent_history_keep(h, seq, $0.baseAddress, gsize($0.count)) }
            kept.append(seq)
            seq &+= 1
        }
        // The newest fit in 8 KiB (packets 200–1100 bytes): the last few are there, byte for byte.
        for s in kept.suffix(6) { #expect(find(s) == packet(s), "packet \(s)") }
        // The oldest were written over, and a slot reused by a newer number does not answer for the old.
        for s in kept.prefix(150) { #expect(find(s) == nil, "packet \(s) should be gone") }
        #expect(find(kept.last! &+ 1) == nil)
        #expect(sfb_sent_history_footprint(h) >= 8192 && sfb_sent_history_footprint(h) < 8192 + 64 * 32 + 64)
        // Too large for the ring (more than half of it) is not kept.
        let big = [UInt8](repeating: 1, count: 5000)
        big.withUnsafeBufferPointer { sfb_sent_history_keep(h, 7, $0.baseAddress, gsize($0.count)) }
        #expect(find(7) == nil)
    }
}
