import Foundation
import GStreamerKit

/// The RTP packets of one `.mjr` file in sending order: sequence numbers and timestamps
/// unwrapped to 64 bits (each taken nearest to the one before it, so 65535 → 0 goes on to
/// 65536), sorted by sequence number, duplicates dropped.
///
/// One damaged packet costs that packet only: a sequence number or timestamp far from the
/// packets around it (`Unwrap.maxSeqJump`, `maxTimeJump`) is set aside, and dropped if the
/// packets after it go on from before it; a jump that the next packets follow (a sender that
/// restarted its counters) is taken as the new line. Without that, one packet off by 0x8000
/// made every later one unwrap 65536 too low, and the output kept a seventh of the call.
struct MjrRTP {
    struct Packet {
        var seq: Int64
        var timestamp: Int64
        var marker: Bool
        /// The payload's bytes in the file's data (after CSRCs, header extension, before padding).
        var payload: Range<Int>
    }

    var packets: [Packet] = []
    /// Packets whose RTP header did not parse (not version 2, or lengths that do not fit).
    var malformed = 0
    /// Packets whose sequence number or timestamp did not fit the packets around them: dropped.
    var outOfLine = 0
    /// Sequence numbers missing between the first and the last packet.
    var lost = 0

    init(_ file: MjrFile) {
        var unwrap = Unwrap(clock: file.kind == .audio ? 48_000 : 90_000)
        packets.reserveCapacity(file.packets.count)
        file.data.withUnsafeBytes { (b: UnsafeRawBufferPointer) in
            for p in file.packets {
                let r = p.range
                guard let parsed = RTPPayload.range(in: b, packet: r) else { malformed += 1; continue }
                let seq16 = UInt16(b[r.lowerBound + 2]) << 8 | UInt16(b[r.lowerBound + 3])
                let ts32 = UInt32(b[r.lowerBound + 4]) << 24 | UInt32(b[r.lowerBound + 5]) << 16
                    | UInt32(b[r.lowerBound + 6]) << 8 | UInt32(b[r.lowerBound + 7])
                unwrap.add(Packet(seq: Int64(seq16), timestamp: Int64(ts32), marker: b[r.lowerBound + 1] & 0x80 != 0, payload: parsed))
            }
        }
        let (kept, dropped) = unwrap.finish()
        packets = kept
        outOfLine = dropped
        // Janus writes in arrival order: usually sorted already, so the sort is cheap.
        if !zip(packets, packets.dropFirst()).allSatisfy({ $0.seq < $1.seq }) {
            packets.sort { $0.seq < $1.seq }
            var unique: [Packet] = []
            unique.reserveCapacity(packets.count)
            for p in packets where unique.last?.seq != p.seq { unique.append(p) }
            packets = unique
        }
        if let first = packets.first, let last = packets.last { lost = Int(last.seq - first.seq + 1) - packets.count }
    }

    /// Unwraps 16-bit sequence numbers and 32-bit timestamps against the last packet in line,
    /// holding back packets that jump until the next ones say whether the jump was real.
    struct Unwrap {
        /// Further than this from the packet before, a sequence number is suspect (Janus's
        /// reorder window and any plausible loss are far below it).
        static let maxSeqJump: Int64 = 3000
        /// Likewise for timestamps: 30 s of media.
        static let maxTimeSeconds: Int64 = 30
        /// Packets that must follow a jump before it is taken as real.
        static let confirm = 3

        let maxTimeJump: Int64
        /// The last packet in line, unwrapped in the sender's own numbering.
        private var last: (seq: Int64, ts: Int64)?
        /// Added to every packet on the way out: nonzero once a restart was taken (see `acceptJump`).
        private var shift: (seq: Int64, ts: Int64) = (0, 0)
        private var kept: [Packet] = []
        /// Packets after a jump, unwrapped against the jumped-to line, not yet confirmed.
        private var held: [Packet] = []
        private var dropped = 0

        init(clock: Int64) { maxTimeJump = Self.maxTimeSeconds * clock }

        mutating func add(_ raw: Packet) {
            guard let last else {
                self.last = (raw.seq, raw.timestamp)
                kept.append(raw)
                return
            }
            let p = Self.near(raw, last)
            if fits(p, after: last) {
                // In line: whatever was held was a damaged packet (or a few), not a new line.
                dropped += held.count
                held = []
                keep(p)
                return
            }
            // Out of line: does it go on from the packets held since the jump?
            if let h = held.last {
                let q = Self.near(raw, (h.seq, h.timestamp))
                if fits(q, after: (h.seq, h.timestamp)) {
                    held.append(q)
                    if held.count >= Self.confirm { acceptJump() }
                    return
                }
                dropped += held.count
            }
            held = [p]
        }

        private func fits(_ p: Packet, after l: (seq: Int64, ts: Int64)) -> Bool {
            abs(p.seq - l.seq) <= Self.maxSeqJump && abs(p.timestamp - l.ts) <= maxTimeJump
        }

        private mutating func keep(_ p: Packet) {
            last = (p.seq, p.timestamp)
            var out = p
            out.seq += shift.seq
            out.timestamp += shift.ts
            kept.append(out)
        }

        /// The held packets started a new line. Sequence numbers in line with a timestamp jump
        /// are a real pause (a camera off for a while): kept as they are. A sequence jump is a
        /// sender that restarted its counters: its packets continue the old numbering, 20 ms after
        /// the last packet, so the output's timeline has no hole of the jump's size.
        private mutating func acceptJump() {
            guard let last, let first = held.first else { return }
            if abs(first.seq - last.seq) > Self.maxSeqJump {
                // One frame's worth after the last packet: 20 ms of audio at 48 kHz, a frame at 90 kHz.
                shift = (shift.seq + last.seq + 1 - first.seq, shift.ts + last.ts + maxTimeJump / (Self.maxTimeSeconds * 50) - first.timestamp)
            }
            let run = held
            held = []
            for p in run { keep(p) }
        }

        /// `raw`'s 16/32-bit numbers taken nearest to `to`.
        private static func near(_ raw: Packet, _ to: (seq: Int64, ts: Int64)) -> Packet {
            var p = raw
            p.seq = to.seq + Int64(Int16(truncatingIfNeeded: UInt16(truncatingIfNeeded: raw.seq) &- UInt16(truncatingIfNeeded: to.seq)))
            p.timestamp = to.ts + Int64(Int32(truncatingIfNeeded: UInt32(truncatingIfNeeded: raw.timestamp) &- UInt32(truncatingIfNeeded: to.ts)))
            return p
        }

        /// Everything kept in line, and how many were dropped (held ones that no packet confirmed
        /// at the end count as dropped unless they are all that came after the jump: a last packet
        /// or two out of line are damage too).
        mutating func finish() -> ([Packet], Int) {
            (kept, dropped + held.count)
        }
    }
}
