import Foundation
import GStreamerKit

/// The RTP packets of one `.mjr` file in sending order: sequence numbers and timestamps
/// unwrapped to 64 bits (each taken nearest to the one before it, so 65535 → 0 goes on to
/// 65536), sorted by sequence number, duplicates dropped.
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
    /// Sequence numbers missing between the first and the last packet.
    var lost = 0

    init(_ file: MjrFile) {
        var lastSeq: Int64? = nil, lastTs: Int64? = nil
        packets.reserveCapacity(file.packets.count)
        file.data.withUnsafeBytes { (b: UnsafeRawBufferPointer) in
            for p in file.packets {
                let r = p.range
                guard let parsed = RTPPayload.range(in: b, packet: r) else { malformed += 1; continue }
                let seq16 = UInt16(b[r.lowerBound + 2]) << 8 | UInt16(b[r.lowerBound + 3])
                let ts32 = UInt32(b[r.lowerBound + 4]) << 24 | UInt32(b[r.lowerBound + 5]) << 16
                    | UInt32(b[r.lowerBound + 6]) << 8 | UInt32(b[r.lowerBound + 7])
                let seq = lastSeq.map { $0 + Int64(Int16(truncatingIfNeeded: seq16 &- UInt16(truncatingIfNeeded: $0))) } ?? Int64(seq16)
                let ts = lastTs.map { $0 + Int64(Int32(truncatingIfNeeded: ts32 &- UInt32(truncatingIfNeeded: $0))) } ?? Int64(ts32)
                lastSeq = seq
                lastTs = ts
                packets.append(Packet(seq: seq, timestamp: ts, marker: b[r.lowerBound + 1] & 0x80 != 0, payload: parsed))
            }
        }
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
}
