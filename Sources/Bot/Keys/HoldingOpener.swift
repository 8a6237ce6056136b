import FrameCrypto
import GStreamerKit
import Synchronization

/// The call-key opener of a recorded feed (`Opener`) that holds frames no key known opens
/// (`KeyHold`, bounded), instead of dropping them at once: the ECall agent asks the key host
/// at the first of them, and when a frame opens again the held ones are tried with the new
/// key and handed on first, in order, with their own timestamps. Nothing unopened is ever
/// handed on. Counted once each: `received` as it arrives, then `opened` or dropped when it
/// is settled; a frame held and opened later never counts as failed.
struct HoldingOpener<Format: FrameFormat>: HoldingFrameTransform {
    let ring: KeyRing
    let stats: FrameStats
    let times: FrameTimes
    let hold: KeyHold
    /// A frame did not open with any key known, held or not: ask for the key now.
    let onKeyMissing: (@Sendable () -> Void)?
    /// A frame was dropped for good (as `Opener`'s `onDrop`).
    let onDrop: (@Sendable (DropReason) -> Void)?
    /// The held frames were settled: how many opened, how many were dropped.
    var onSettled: (@Sendable (_ opened: Int, _ dropped: Int) -> Void)? = nil
    private let settling = SettleCounts()
    var metrics = FrameMetrics(kind: Format.kind, format: FrameFormatName.ecall.rawValue)

    func outputCapacity(for input: UnsafeRawBufferPointer) -> Int { Format.openedCapacity(input) }

    func transform(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> FrameOutcome {
        stats.received()
        times.mark()
        do {
            let n = try Format.open(input, keys: ring.candidates, into: output)
            hold.opened()
            stats.opened()
            metrics.opened()
            return .output(n)
        } catch {
            if error == .noKey {
                onKeyMissing?()
                if hold.admit(bytes: input.count) { return .hold }
            }
            drop(error)
            return .drop
        }
    }

    func retry(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Int? {
        do {
            let n = try Format.open(input, keys: ring.candidates, into: output)
            stats.opened()
            metrics.opened()
            settling.opened.add(1, ordering: .relaxed)
            return n
        } catch {
            drop(error)
            settling.dropped.add(1, ordering: .relaxed)
            return nil
        }
    }

    func settled(abandoned: Int) {
        for _ in 0..<abandoned { drop(.noKey) }
        hold.settled()
        let opened = settling.opened.exchange(0, ordering: .relaxed), dropped = settling.dropped.exchange(0, ordering: .relaxed)
        onSettled?(opened, dropped + abandoned)
    }

    private func drop(_ reason: DropReason) {
        stats.dropped(reason)
        metrics.dropped(reason)
        onDrop?(reason)
    }
}

/// One settlement's outcome, counted as the held frames are retried.
final class SettleCounts: Sendable {
    let opened = Atomic<Int>(0)
    let dropped = Atomic<Int>(0)
}

extension Pad {
    /// The receive side of a recorded feed, on the source pad of the branch's `open` element
    /// (`sink`: that element's sink pad): as `attachReceiver`, except that with the call key
    /// (`.e2ee`) and a `hold` other than `.none` the frames no key opens are held
    /// (`HoldingOpener`). `onKeyMissing` is called at every frame no key opens, held or not.
    func attachRecordingReceiver<F: FrameFormat>(_ protection: FrameProtection, _ format: F.Type, sink: Pad, hold: KeyHoldBounds,
                                                        stats: FrameStats, times: FrameTimes, display: String, feedID: Int64,
                                                        openedBy: KeyIndexCounts?, onKeyMissing: (@Sendable () -> Void)?,
                                                        onDrop: (@Sendable (DropReason) -> Void)? = nil,
                                                        onSettled: (@Sendable (_ opened: Int, _ dropped: Int) -> Void)? = nil) -> PadProbe {
        if case .e2ee(let ring) = protection, hold != .none {
            return addHoldingFrameTransform(HoldingOpener<F>(ring: ring, stats: stats, times: times, hold: KeyHold(hold),
                                                             onKeyMissing: onKeyMissing, onDrop: onDrop, onSettled: onSettled), sink: sink)
        }
        return attachReceiver(protection, format, stats: stats, times: times, display: display, feedID: feedID, openedBy: openedBy,
                              onDrop: { reason in
                                  if reason == .noKey { onKeyMissing?() }
                                  onDrop?(reason)
                              })
    }
}
