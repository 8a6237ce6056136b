import CDirectRTP
import CGStreamer
import GStreamerKit
import Testing

/// The direct path's C parsers (rtp_parse.c): RTP payload lengths agree with GStreamerKit's
/// RTPPayload, receiver report blocks are read from SR and RR packets, and nothing is read past
/// a truncated packet. FuzzRTPHeader checks the same on random input.
@Suite struct RTPParserTests {
    func cLength(_ p: [UInt8]) -> Int { p.withUnsafeBufferPointer { Int(sfb_rtp_payload_length($0.baseAddress, gsize($0.count))) } }
    func swiftLength(_ p: [UInt8]) -> Int { p.withUnsafeBytes { b in RTPPayload.range(in: b, packet: 0..<b.count)?.count ?? 0 } }

    @Test func payloadLengthsAgreeWithRTPPayload() {
        var full: [UInt8] = [0xB2, 111, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3] + [UInt8](repeating: 9, count: 8)
        full += [0xBE, 0xDE, 0, 1, 1, 2, 3, 4] + [10, 11, 12, 13, 14] + [0, 0, 3]
        let cases: [[UInt8]] = [
            full,                                                           // CSRCs, extension, padding: 5
            [0x80, 111, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 42],                  // 1
            [0x80, 111, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3],                      // header only: 0
            [0x80, 111, 0, 1, 0, 0, 0, 2, 0, 0, 0],                         // 11 bytes
            [0x40, 111, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 1],                   // version 1
            [0x90, 111, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0xBE, 0xDE, 0, 9],    // extension longer than the packet
            [0x90, 111, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0xBE, 0xDE],          // extension header cut
            [0xA0, 111, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 1, 200],              // padding longer than the payload
            [0x8F, 111, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3],                      // 15 CSRCs that are not there
        ]
        #expect(cases.map(cLength) == [5, 1, 0, 0, 0, 0, 0, 0, 0])
        for c in cases { #expect(cLength(c) == swiftLength(c), "\(c)") }
    }

    /// One report block (RFC 3550 §6.4.1) about `ssrc`.
    static func block(ssrc: UInt32, lost: Int32, jitter: UInt32) -> [UInt8] {
        let l = UInt32(bitPattern: lost) & 0xFF_FFFF
        return be(ssrc) + [0x10, UInt8(l >> 16), UInt8(l >> 8 & 0xff), UInt8(l & 0xff)] + be(0x1_0005) + be(jitter) + be(0) + be(0)
    }
    static func be(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(v >> 16 & 0xff), UInt8(v >> 8 & 0xff), UInt8(v & 0xff)] }
    static func header(count: Int, type: UInt8, bodyBytes: Int) -> [UInt8] {
        let words = (4 + bodyBytes) / 4 - 1
        return [0x80 | UInt8(count), type, UInt8(words >> 8), UInt8(words & 0xff)]
    }

    func read(_ p: [UInt8], ssrc: UInt32) -> (found: UInt32, lost: Int, jitter: UInt32) {
        var lost: gint64 = -99, jitter: UInt32 = 99
        let n = p.withUnsafeBufferPointer { sfb_rtcp_report_blocks($0.baseAddress, gsize($0.count), ssrc, &lost, &jitter) }
        return (n, lost, jitter)
    }

    @Test func reportBlocksAboutOurSSRCAreReadFromSenderAndReceiverReports() {
        let ours: UInt32 = 0xCAFE_0001
        // SR: sender SSRC + 20 bytes of sender info, then a block about someone else and one about us.
        let srBody = Self.be(7) + [UInt8](repeating: 0, count: 20) + Self.block(ssrc: 5, lost: 1, jitter: 1) + Self.block(ssrc: ours, lost: -3, jitter: 160)
        let sr = Self.header(count: 2, type: 200, bodyBytes: srBody.count) + srBody
        // RR after it in the same compound packet, with a newer block about us.
        let rrBody = Self.be(7) + Self.block(ssrc: ours, lost: 12, jitter: 480)
        let rr = Self.header(count: 1, type: 201, bodyBytes: rrBody.count) + rrBody
        let sdes = Self.header(count: 0, type: 202, bodyBytes: 4) + Self.be(7)

        #expect(read(sr, ssrc: ours) == (1, -3, 160), "24-bit signed loss")
        #expect(read(sr + sdes + rr, ssrc: ours) == (2, 12, 480), "the newest block wins")
        #expect(read(sr + rr, ssrc: 0x1234) == (0, -99, 99), "nothing about another SSRC")
        // A block count larger than the packet holds: only the blocks that are there.
        var lying = sr
        lying[0] = 0x80 | 5
        #expect(read(lying, ssrc: ours) == (1, -3, 160))
        // Truncated: the second packet's length runs past the end; the first is still read.
        #expect(read(sr + rr.dropLast(4), ssrc: ours) == (1, -3, 160))
        #expect(read(Array(sr.prefix(3)), ssrc: ours).found == 0)
        #expect(read([], ssrc: ours).found == 0)
    }
}
