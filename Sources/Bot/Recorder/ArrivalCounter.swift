import Synchronization

/// Frames of one track as they arrive from Janus, counted on the RTP packets before the
/// depayloader: one per new RTP timestamp carrying payload (a video frame's packets share
/// one; padding-only packets carry none). `frames.received` is counted after the depayloader,
/// which discards what it cannot put together (before the first SPS/PPS, after a negotiation
/// it refused): the difference is what was lost there (issue 39: a third of the video around
/// picture-size changes went missing before any counter saw it).
final class ArrivalCounter: Sendable {
    private let last = Atomic<Int64>(-1)
    private let count = Atomic<Int>(0)

    var value: Int { count.load(ordering: .relaxed) }

    /// Streaming thread: one RTP packet (RFC 3550 §5.1).
    func observe(_ rtp: UnsafeRawBufferPointer) {
        guard rtp.count >= 12, rtp[0] >> 6 == 2 else { return }
        var header = 12 + 4 * Int(rtp[0] & 0x0f)
        if rtp[0] & 0x10 != 0 {
            guard rtp.count >= header + 4 else { return }
            header += 4 + 4 * (Int(rtp[header + 2]) << 8 | Int(rtp[header + 3]))
        }
        let padding = rtp[0] & 0x20 != 0 ? Int(rtp[rtp.count - 1]) : 0
        guard rtp.count - padding > header else { return }
        let timestamp = Int64(rtp[4]) << 24 | Int64(rtp[5]) << 16 | Int64(rtp[6]) << 8 | Int64(rtp[7])
        if last.exchange(timestamp, ordering: .relaxed) != timestamp { count.add(1, ordering: .relaxed) }
    }
}
