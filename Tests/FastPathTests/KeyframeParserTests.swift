import CDirectRTP
import CGStreamer
import Testing

/// What the direct path reads for video (rtp_parse.c): which H.264 RTP payloads start an IDR
/// (its answer to a keyframe request), and which RTCP feedback asks for one.
@Suite struct KeyframeParserTests {
    func startsIDR(_ p: [UInt8]) -> Bool { p.withUnsafeBufferPointer { sfb_h264_rtp_starts_idr($0.baseAddress, gsize($0.count)) != 0 } }
    func requests(_ p: [UInt8], _ ssrc: UInt32) -> Int {
        p.withUnsafeBufferPointer { Int(sfb_rtcp_keyframe_requests($0.baseAddress, gsize($0.count), ssrc)) }
    }

    @Test("IDR starts: single NAL 5, a STAP-A holding one, an FU-A's first fragment; not P slices, SPS alone, middle fragments")
    func idrStarts() {
        #expect(startsIDR([0x65, 0x88, 0x84]))                                      // single NAL, type 5
        #expect(!startsIDR([0x41, 0x9a]))                                           // single NAL, type 1
        #expect(!startsIDR([0x67, 0x42]))                                           // SPS alone
        #expect(startsIDR([0x78, 0, 2, 0x67, 0x42, 0, 1, 0x68, 0, 2, 0x65, 0x88]))  // STAP-A: SPS, PPS, IDR
        #expect(!startsIDR([0x78, 0, 2, 0x67, 0x42, 0, 1, 0x68]))                   // STAP-A: SPS, PPS
        #expect(!startsIDR([0x78, 0, 9, 0x67]))                                     // STAP-A cut short
        #expect(startsIDR([0x7c, 0x85, 0x88]))                                      // FU-A, S bit, type 5
        #expect(!startsIDR([0x7c, 0x05, 0x88]))                                     // FU-A, middle of an IDR
        #expect(!startsIDR([0x5c, 0x81, 0x9a]))                                     // FU-A, S bit, type 1
        #expect(!startsIDR([0x7c]) && !startsIDR([]))
    }

    static func be(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(v >> 16 & 0xff), UInt8(v >> 8 & 0xff), UInt8(v & 0xff)] }

    @Test("PLI and FIR about our SSRC are counted, in a compound packet after an RR; others' and truncated ones are not")
    func feedback() {
        let ours: UInt32 = 0x1234_5678, theirs: UInt32 = 0x0BAD_F00D
        let rr: [UInt8] = [0x80, 201, 0, 1] + Self.be(1)                            // RR with no blocks
        let pli = { (media: UInt32) -> [UInt8] in [0x81, 206, 0, 2] + Self.be(1) + Self.be(media) }
        let fir: [UInt8] = [0x84, 206, 0, 6] + Self.be(1) + Self.be(0) + Self.be(theirs) + [3, 0, 0, 0] + Self.be(ours) + [4, 0, 0, 0]
        let remb: [UInt8] = [0x8f, 206, 0, 2] + Self.be(1) + Self.be(ours)         // FMT 15: not a keyframe request
        #expect(requests(pli(ours), ours) == 1)
        #expect(requests(rr + pli(ours), ours) == 1)
        #expect(requests(rr + pli(theirs), ours) == 0)
        #expect(requests(rr + fir, ours) == 1 && requests(fir, theirs) == 1)
        #expect(requests(rr + pli(ours) + fir + remb, ours) == 2)
        #expect(requests(Array(pli(ours).dropLast()), ours) == 0)                  // truncated
        #expect(requests(remb, ours) == 0)
    }
}
