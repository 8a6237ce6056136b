@testable import Mjr
import Foundation
import Testing

/// Unwrapping the 16-bit sequence numbers and 32-bit timestamps of a `.mjr` file's packets
/// (no I/O): one damaged packet costs only itself, wraparounds and real pauses go through.
@Suite struct MjrUnwrapTests {
    func run(_ raw: [(UInt16, UInt32)], clock: Int64 = 48_000) -> (seqs: [Int64], stamps: [Int64], dropped: Int) {
        var u = MjrRTP.Unwrap(clock: clock)
        for (s, t) in raw { u.add(.init(seq: Int64(s), timestamp: Int64(t), marker: false, payload: 0..<0)) }
        let (kept, dropped) = u.finish()
        return (kept.map(\.seq), kept.map(\.timestamp), dropped)
    }

    /// `n` packets of 20 ms audio from (seq, ts).
    func line(_ n: Int, seq: UInt16, ts: UInt32) -> [(UInt16, UInt32)] {
        (0..<n).map { (seq &+ UInt16($0), ts &+ UInt32($0 * 960)) }
    }

    @Test func wrapsAroundBothCounters() {
        let r = run(line(10, seq: 65530, ts: UInt32.max - 4000))
        #expect(r.seqs == (0..<10).map { 65530 + Int64($0) } && r.dropped == 0)
        #expect(zip(r.stamps, r.stamps.dropFirst()).allSatisfy { $1 - $0 == 960 })
    }

    @Test func aSequenceNumberOffBy0x8000IsDroppedAlone() {
        var raw = line(100, seq: 1000, ts: 5000)
        raw[57].0 ^= 0x8000
        let r = run(raw)
        #expect(r.dropped == 1 && r.seqs.count == 99 && !r.seqs.contains(1057) && r.seqs.last == 1099, "\(r.seqs.suffix(5))")
    }

    @Test func aTimestampOffBy2To30IsDroppedAlone() {
        var raw = line(100, seq: 1000, ts: 5000)
        raw[57].1 ^= 1 << 30
        let r = run(raw)
        #expect(r.dropped == 1 && r.seqs.count == 99 && r.stamps.last == 5000 + 99 * 960)
    }

    @Test func twoDamagedPacketsInARowAreDroppedAndTheRestKept() {
        var raw = line(60, seq: 7, ts: 0)
        raw[20].0 ^= 0x4000
        raw[21].0 ^= 0x4000
        let r = run(raw)
        #expect(r.dropped == 2 && r.seqs.count == 58)
    }

    @Test func aRealPauseInTimeIsKept() {
        // Sequence numbers go on; 40 s pass between two video packets (a camera off): not damage.
        let raw = line(10, seq: 100, ts: 0) + line(10, seq: 110, ts: 40 * 90_000)
        let r = run(raw, clock: 90_000)
        #expect(r.dropped == 0 && r.stamps[10] == 40 * 90_000 && r.seqs.last == 119)
    }

    @Test func countersThatRestartGoOnFromTheOldLine() {
        let raw = line(10, seq: 100, ts: 960_000) + line(10, seq: 40_000, ts: 7)
        let r = run(raw)
        #expect(r.dropped == 0 && r.seqs == (100..<120).map(Int64.init), "\(r.seqs)")
        #expect(r.stamps[10] == r.stamps[9] + 960, "20 ms after the last packet: \(r.stamps[9]) → \(r.stamps[10])")
    }
}
