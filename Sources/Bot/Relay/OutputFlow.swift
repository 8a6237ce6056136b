import GStreamerKit
import Synchronization

/// What became of the frames one output graph's `appsrc` took: each is sent on, still queued, or
/// was dropped. The queue is leaky (a live stream drops its oldest rather than fall behind), and
/// GStreamer 1.22's appsrc counts nothing it drops; so the frames pushed, less those that left
/// its queue and those still in it, are those it dropped: a destination slower than the stream
/// (its socket full, the muxer's queue full behind it), or a queue thrown away when the graph
/// failed or stopped.
final class OutputFlow: Sendable {
    private let source: AppSource
    private let pushed = Counter()
    private let left = Counter()
    private let probe: PadProbe
    /// Dropped frames already reported (the count only grows).
    private let reported = Atomic<Int>(0)

    init(_ source: AppSource) throws(GStreamerError) {
        self.source = source
        let left = self.left
        probe = try source.sourcePad().addBufferObserver { _ in left.increment() }
    }

    /// A frame the appsrc took.
    func took() { pushed.increment() }

    /// Frames dropped since the last call (one caller at a time). Read while frames flow, the
    /// three counts are not one instant's: the order below can only undercount, never count a
    /// frame that was not dropped; once the graph is stopped (its queue flushed) it is exact.
    func newlyDropped() -> Int {
        // In this order: a frame pushed before the first read is then either queued or has
        // left by the last (or was dropped); reading it in both only undercounts, until later.
        let taken = pushed.value
        let queued = source.queuedBuffers
        let dropped = taken - queued - left.value
        let before = reported.load(ordering: .relaxed)
        guard dropped > before else { return 0 }
        reported.store(dropped, ordering: .relaxed)
        return dropped - before
    }
}
