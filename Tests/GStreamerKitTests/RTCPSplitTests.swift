import CGStreamerShims
import Testing

/// `sfb_rtcp_split` (CGStreamerShims/rtcp_split.c) with crafted compounds as rtpsession sends
/// them: Janus gives a compound to the stream of its first report block only, so each stream
/// must get a compound whose first block is its own, with the NACK or PLI about it.
@Suite struct RTCPSplitTests {
    static let own: UInt32 = 0x0102_0304

    static func be32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(v >> 16 & 0xff), UInt8(v >> 8 & 0xff), UInt8(v & 0xff)] }

    /// An RR from `own` with a block per SSRC (the rest of each block: its index, repeated).
    static func rr(_ ssrcs: [UInt32]) -> [UInt8] {
        var p: [UInt8] = [0x80 | UInt8(ssrcs.count), 201, 0, UInt8(1 + 6 * ssrcs.count)] + be32(own)
        for (i, s) in ssrcs.enumerated() { p += be32(s) + Array(repeating: UInt8(i + 1), count: 20) }
        return p
    }

    static let sdes: [UInt8] = [0x81, 202, 0, 3] + be32(own) + [1, 2, 0x61, 0x62, 0, 0, 0, 0]
    static func nack(_ media: UInt32, seq: UInt16) -> [UInt8] { [0x81, 205, 0, 3] + be32(own) + be32(media) + [UInt8(seq >> 8), UInt8(seq & 0xff), 0, 0] }
    static func pli(_ media: UInt32) -> [UInt8] { [0x81, 206, 0, 2] + be32(own) + be32(media) }

    /// The compounds out, or nil when kept as it is.
    static func split(_ compound: [UInt8]) -> [[UInt8]]? {
        var out = [UInt8](repeating: 0, count: 31 * (32 + compound.count))
        var lengths = [UInt](repeating: 0, count: 31)
        let n = Int(sfb_rtcp_split(compound, UInt(compound.count), &out, UInt(out.count), &lengths, 31))
        guard n > 0 else { return nil }
        var at = 0
        return lengths.prefix(n).map { Int($0) }.map { length in
            defer { at += length }
            return Array(out[at..<(at + length)])
        }
    }

    @Test("three streams reported on, a NACK about the second and a PLI about the third: three compounds, each an RR with its own block first, the SDES, and its own feedback")
    func splitsPerStream() throws {
        let (a, b, c): (UInt32, UInt32, UInt32) = (0xA, 0xB, 0xC)
        let compound = Self.rr([a, b, c]) + Self.sdes + Self.nack(b, seq: 77) + Self.pli(c)
        let parts = try #require(Self.split(compound))
        #expect(parts.count == 3)
        let whole = Self.rr([a, b, c])
        for (i, part) in parts.enumerated() {
            // RR: one block, the original block's bytes, from the same SSRC.
            #expect(Array(part.prefix(8)) == [0x81, 201, 0, 7] + Self.be32(Self.own))
            #expect(Array(part[8..<32]) == Array(whole[(8 + 24 * i)..<(32 + 24 * i)]))
            #expect(Array(part[32..<(32 + Self.sdes.count)]) == Self.sdes)
        }
        #expect(parts[0].count == 32 + Self.sdes.count)
        #expect(Array(parts[1].suffix(16)) == Self.nack(b, seq: 77))
        #expect(Array(parts[2].suffix(12)) == Self.pli(c))
    }

    @Test("feedback about no stream reported on stays with the first stream's compound")
    func unknownFeedbackGoesFirst() throws {
        let parts = try #require(Self.split(Self.rr([0xA, 0xB]) + Self.sdes + Self.nack(0xF, seq: 1)))
        #expect(parts.count == 2)
        #expect(Array(parts[0].suffix(16)) == Self.nack(0xF, seq: 1))
        #expect(parts[1].count == 32 + Self.sdes.count)
    }

    @Test("kept as it is: one block (what a split part is), no block, a sender report, a malformed compound")
    func keptAsItIs() {
        #expect(Self.split(Self.rr([0xA]) + Self.sdes + Self.nack(0xA, seq: 5)) == nil)
        #expect(Self.split(Self.rr([]) + Self.sdes) == nil)
        var sr = Self.rr([0xA, 0xB])
        sr[1] = 200
        #expect(Self.split(sr + Self.sdes) == nil)
        #expect(Self.split(Array((Self.rr([0xA, 0xB]) + Self.sdes).dropLast(4))) == nil)
    }
}
