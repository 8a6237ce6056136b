/// Joins timelines that restart inside one stream, the way MPEG-TS files concatenated with
/// `cat` do: the second file's timestamps begin again near 0 with no new segment, so its
/// running time goes back, `clocksync` lets it all through at once and the RTP timestamps jump
/// back (measured: the second 3 s of a concatenated TS sent in 0.3 s).
///
/// Pure state, no I/O: `map` is called for every buffer of every stream (on their streaming
/// threads, under the caller's lock) and returns the offset to add to its timestamps. A stream
/// whose timestamps go back by more than `threshold` starts a new epoch. The first stream to
/// reach the restart places it right after the furthest end any stream reached; the other
/// streams, reaching the same restart later (decoders lag one another), take the same offset,
/// so audio and video stay together.
public struct TimelineJoin: Sendable {
    /// A step back smaller than this is reordering (B-frames), not a restart.
    public static let threshold: UInt64 = 500_000_000

    private var offsets: [Int64] = [0]
    private var streams: [Int: (last: UInt64, epoch: Int)] = [:]
    /// The furthest end (mapped) of any buffer so far, in nanoseconds.
    private var end: Int64 = 0

    public init() {}

    /// How many restarts were joined.
    public var joined: Int { offsets.count - 1 }

    /// The offset (ns) to add to this buffer's timestamps. `pts` is the buffer's own.
    public mutating func map(stream: Int, pts: UInt64, duration: UInt64?) -> Int64 {
        var state = streams[stream] ?? (last: pts, epoch: 0)
        if pts &+ Self.threshold < state.last {
            let next = state.epoch + 1
            if next == offsets.count { offsets.append(end - Int64(clamping: pts)) }
            state.epoch = next
        }
        state.last = pts
        streams[stream] = state
        let offset = offsets[state.epoch]
        end = max(end, Int64(clamping: pts) + offset + Int64(clamping: duration ?? 0))
        return offset
    }

    /// A new segment or a flush (a seek, a loop): timestamps start over legitimately.
    public mutating func reset() { self = TimelineJoin() }
}
