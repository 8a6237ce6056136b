import CoreMetrics
import Locking
import Synchronization

/// How long the output graph holds what the relay hands it: from a frame's push into the
/// graph (its appsrc stamps it then) to the buffer carrying it reaching the network sink
/// (FLV or MPEG-TS muxed, or RTP), per buffer. What comes before, from the packet's arrival to
/// the push, is the jitter buffer's in-order path and the open (about a millisecond, measured
/// by the bridge); what comes after is the network's.
/// `sfubot_relay_output_delay_seconds` (a histogram) and the last `kept` values for the
/// relay's last lines.
public final class RelayDelays: Sendable {
    public struct Summary: Sendable {
        public var count: Int
        public var p50: Double
        public var p95: Double
    }

    static let kept = 4096
    private let timer = CoreMetrics.Timer(label: "sfubot_relay_output_delay_seconds")
    private let recent = Locked((values: [Int64](), next: 0, count: 0))

    init() {}

    /// One buffer at the sink, `nanoseconds` after its push (streaming thread).
    func record(nanoseconds: Int64) {
        guard nanoseconds >= 0 else { return }
        timer.recordNanoseconds(nanoseconds)
        recent.withLock { r in
            if r.values.count < Self.kept { r.values.append(nanoseconds) } else { r.values[r.next] = nanoseconds }
            r.next = (r.next + 1) % Self.kept
            r.count += 1
        }
    }

    /// Percentiles (seconds) of the last `kept` buffers; nil before the first.
    public var summary: Summary? {
        let (values, count) = recent.withLock { ($0.values, $0.count) }
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        func at(_ q: Double) -> Double { Double(sorted[min(sorted.count - 1, Int(q * Double(sorted.count)))]) / 1e9 }
        return Summary(count: count, p50: at(0.5), p95: at(0.95))
    }
}
