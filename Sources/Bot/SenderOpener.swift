public import FrameCrypto
import GStreamerKit
import Synchronization
import Locking

/// Opens one sender's frames with that sender's keys (`--key-map`), newest index first, and
/// counts which index opened each. The keys are resolved once, when the feed is attached.
struct SenderOpener<Format: FrameFormat>: FrameTransform {
    /// One single-key candidate set per index, newest first: built once, not per frame.
    let tries: [KeyRing.Candidates]
    let counts: KeyIndexCounts
    let stats: FrameStats
    let times: FrameTimes
    var onDrop: (@Sendable (DropReason) -> Void)? = nil
    var metrics = FrameMetrics(kind: Format.kind, format: FrameFormatName.ecall.rawValue)

    init(sender: KeyMap.SenderKeys, counts: KeyIndexCounts, stats: FrameStats, times: FrameTimes, onDrop: (@Sendable (DropReason) -> Void)?) {
        tries = sender.keys.map { KeyRing.Candidates(current: $0.key) }
        self.counts = counts
        self.stats = stats
        self.times = times
        self.onDrop = onDrop
    }

    func outputCapacity(for input: UnsafeRawBufferPointer) -> Int { Format.openedCapacity(input) }

    func transform(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Int? {
        stats.received()
        times.mark()
        var reason = DropReason.noKey
        for (slot, keys) in tries.enumerated() {
            do {
                let n = try Format.open(input, keys: keys, into: output)
                counts.opened(slot: slot)
                stats.opened()
                metrics.opened()
                return n
            } catch {
                reason = error
                // A frame without the marker, too short or malformed fails whatever the key.
                if error != .noKey { break }
            }
        }
        stats.dropped(reason)
        metrics.dropped(reason)
        onDrop?(reason)
        return nil
    }
}

/// Per feed: how many frames each of its sender's key indexes opened (the manifest's
/// `opened_by_key_index`). Lock-free for a key map's indexes (one atomic counter each, fixed
/// when attached); the indexes a frame names itself (FrameCryptor, SFrame) are counted under a lock.
public final class KeyIndexCounts: Sendable {
    private final class Slot: Sendable {
        let index: Int
        let count = Atomic<Int>(0)
        init(index: Int) { self.index = index }
    }
    private let slots: [Slot]
    private let named = Locked<[UInt64: Int]>([:])

    public init(_ sender: KeyMap.SenderKeys) {
        slots = sender.keys.map { Slot(index: $0.index) }
    }

    /// Counts for frames that name their own key index.
    public init() { slots = [] }

    func opened(index: UInt64) {
        named.withLock { $0[index, default: 0] += 1 }
    }

    func opened(slot: Int) {
        // Made for the same sender as the opener (same lookup); a mismatch must not trap.
        guard slot < slots.count else { return }
        slots[slot].count.add(1, ordering: .relaxed)
    }

    /// Index (as text, the JSON key) → frames it opened; indexes that opened none are left out.
    public var snapshot: [String: Int] {
        var out = [String: Int]()
        for s in slots {
            let n = s.count.load(ordering: .relaxed)
            if n > 0 { out[String(s.index)] = n }
        }
        for (index, n) in named.withLock({ $0 }) { out[String(index), default: 0] += n }
        return out
    }
}
