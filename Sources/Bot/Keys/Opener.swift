import FrameCrypto
import GStreamerKit
import Synchronization

/// A format's part of opening one feed's frames, nothing counted: the call key (`CallKeyOpening`),
/// or the key each frame names (FrameCryptor, SFrame: `IndexedOpening`).
protocol FrameOpening: Sendable {
    /// The `kind` and `format` labels of the frame counters.
    var labels: (kind: String, format: String) { get }
    /// Why a frame fails whose key may still come (handed in, or the call key asked for): such
    /// frames are held for it when the opener has a hold.
    var keyPending: DropReason { get }
    func outputCapacity(for input: UnsafeRawBufferPointer) -> Int
    func open(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) throws(DropReason) -> Int
}

/// Opens each received frame after the depayloader. Frames that do not open are counted by
/// reason, never reach the file, and call `onDrop` with the reason (video asks for a keyframe
/// there). With a `hold` (on a pad with `addHoldingFrameTransform`), frames whose key is not
/// there yet (`keyPending`) are held (`KeyHold`, bounded) instead of dropped at once: when a
/// frame opens again the held ones are tried with the keys now known and handed on first, in
/// order, with their own timestamps. Nothing unopened is ever handed on. Counted once each:
/// `received` as it arrives, then `opened` or dropped when it is settled; a frame held and
/// opened later never counts as failed. Used as a plain `FrameTransform` it holds nothing.
struct Opener<Opening: FrameOpening>: HoldingFrameTransform, FrameTransform {
    let opening: Opening
    let stats: FrameStats
    let times: FrameTimes
    var hold: KeyHold? = nil
    /// A frame failed with `keyPending`, held or not: the ECall agent asks for the call key now.
    var onKeyMissing: (@Sendable () -> Void)? = nil
    /// A frame was dropped for good.
    var onDrop: (@Sendable (DropReason) -> Void)? = nil
    /// The held frames were settled: how many opened, how many were dropped.
    var onSettled: (@Sendable (_ opened: Int, _ dropped: Int) -> Void)? = nil
    private let settling = SettleCounts()
    var metrics: FrameMetrics

    init(_ opening: Opening, stats: FrameStats, times: FrameTimes, hold: KeyHold? = nil, onKeyMissing: (@Sendable () -> Void)? = nil,
         onDrop: (@Sendable (DropReason) -> Void)? = nil, onSettled: (@Sendable (_ opened: Int, _ dropped: Int) -> Void)? = nil,
         metrics: FrameMetrics? = nil) {
        (self.opening, self.stats, self.times, self.hold) = (opening, stats, times, hold)
        (self.onKeyMissing, self.onDrop, self.onSettled) = (onKeyMissing, onDrop, onSettled)
        self.metrics = metrics ?? FrameMetrics(kind: opening.labels.kind, format: opening.labels.format)
    }

    func outputCapacity(for input: UnsafeRawBufferPointer) -> Int { opening.outputCapacity(for: input) }

    func transform(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> FrameOutcome {
        arrive(input, into: output, hold: hold)
    }

    func transform(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Int? {
        if case .output(let n) = arrive(input, into: output, hold: nil) { n } else { nil }
    }

    private func arrive(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer, hold: KeyHold?) -> FrameOutcome {
        stats.received()
        times.mark()
        do {
            let n = try opening.open(input, into: output)
            hold?.opened()
            stats.opened()
            metrics.opened()
            return .output(n)
        } catch {
            if error == opening.keyPending {
                onKeyMissing?()
                if let hold, hold.admit(bytes: input.count) { return .hold }
            }
            drop(error)
            return .drop
        }
    }

    func retry(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Int? {
        do {
            let n = try opening.open(input, into: output)
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
        for _ in 0..<abandoned { drop(opening.keyPending) }
        hold?.settled()
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

/// ECall's frames, opened with the call key ring (any of its keys).
struct CallKeyOpening<Format: FrameFormat>: FrameOpening {
    let ring: KeyRing
    var labels: (kind: String, format: String) { (Format.kind, FrameFormatName.ecall.rawValue) }
    var keyPending: DropReason { .noKey }
    func outputCapacity(for input: UnsafeRawBufferPointer) -> Int { Format.openedCapacity(input) }
    func open(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) throws(DropReason) -> Int {
        try Format.open(input, keys: ring.candidates, into: output)
    }
}

extension Opener {
    /// The call key's opener.
    init<F: FrameFormat>(ring: KeyRing, _ format: F.Type, stats: FrameStats, times: FrameTimes, hold: KeyHold? = nil,
                         onKeyMissing: (@Sendable () -> Void)? = nil, onDrop: (@Sendable (DropReason) -> Void)? = nil,
                         onSettled: (@Sendable (_ opened: Int, _ dropped: Int) -> Void)? = nil, metrics: FrameMetrics? = nil)
    where Opening == CallKeyOpening<F> {
        self.init(CallKeyOpening(ring: ring), stats: stats, times: times, hold: hold, onKeyMissing: onKeyMissing, onDrop: onDrop,
                  onSettled: onSettled, metrics: metrics)
    }
}

extension Pad {
    /// The receive side of a recorded (or relayed) feed, on the source pad of the branch's `open`
    /// element (`sink`: that element's sink pad): as `attachReceiver`, except that frames whose
    /// key may still come are held (`Opener`'s hold), never blocking the streaming thread (on
    /// the direct receive path, the PeerConnection's only one). With the call key (`.e2ee`):
    /// when `hold` is not `.none` (something asks for the key: `onKeyMissing`, called at every
    /// frame no key opens, held or not). With keys the frames name (`.indexed`, handed in while
    /// the call runs): up to `--key-wait` from the first frame held, within `KeyHoldBounds`'
    /// frames and bytes.
    func attachRecordingReceiver<F: FrameFormat>(_ protection: FrameProtection, _ format: F.Type, sink: Pad, hold: KeyHoldBounds,
                                                 stats: FrameStats, times: FrameTimes, display: String, feedID: Int64?,
                                                 openedBy: KeyIndexCounts?, onKeyMissing: (@Sendable () -> Void)?,
                                                 onDrop: (@Sendable (DropReason) -> Void)? = nil,
                                                 onSettled: (@Sendable (_ opened: Int, _ dropped: Int) -> Void)? = nil) -> PadProbe {
        switch protection {
        case .e2ee(let ring) where hold != .none:
            return addHoldingFrameTransform(Opener(ring: ring, F.self, stats: stats, times: times, hold: KeyHold(hold),
                                                   onKeyMissing: onKeyMissing, onDrop: onDrop, onSettled: onSettled), sink: sink)
        case .indexed(let p):
            var bounds = KeyHoldBounds()
            bounds.seconds = Double(p.keyWait.components.seconds) + Double(p.keyWait.components.attoseconds) / 1e18
            return addHoldingFrameTransform(p.transforms.opener(kind: F.mediaKind, participant: p.participantIDs.id(display: display, feedID: feedID),
                                                                stats: stats, times: times, counts: openedBy ?? KeyIndexCounts(),
                                                                hold: KeyHold(bounds), onDrop: onDrop, onSettled: onSettled), sink: sink)
        default:
            return attachReceiver(protection, format, stats: stats, times: times, display: display, feedID: feedID, openedBy: openedBy,
                                  onDrop: { reason in
                                      if reason == .noKey { onKeyMissing?() }
                                      onDrop?(reason)
                                  })
        }
    }
}
