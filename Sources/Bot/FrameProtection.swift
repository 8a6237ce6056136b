public import FrameCrypto
import Foundation
public import GStreamerKit
import Synchronization

/// Whether media is sealed with the call key (ECall's E2EE) or sent as is.
public enum FrameProtection: Sendable {
    case e2ee(KeyRing)
    case none

    public var isEncrypted: Bool { if case .e2ee = self { true } else { false } }
}

/// Seals each encoded Opus frame before the payloader. With no key, or if sealing fails,
/// the frame is dropped: nothing leaves in the clear.
struct AudioSealer: FrameTransform {
    let ring: KeyRing
    let stats: FrameStats

    func outputCapacity(for input: UnsafeRawBufferPointer) -> Int { input.count + AudioFrame.overhead }

    func transform(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Int? {
        guard let key = ring.sealingKey, let n = try? AudioFrame.seal(input, key: key, into: output) else {
            stats.sealFailed()
            return nil
        }
        stats.sealed()
        return n
    }
}

/// Opens each received frame after the depayloader; frames that do not open are counted
/// by reason and never reach the file.
struct AudioOpener: FrameTransform {
    let ring: KeyRing
    let stats: FrameStats
    let times: FrameTimes

    func outputCapacity(for input: UnsafeRawBufferPointer) -> Int { max(0, input.count - AudioFrame.overhead) }

    func transform(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Int? {
        stats.received()
        times.mark()
        do {
            let n = try AudioFrame.open(input, keys: ring.candidates, into: output)
            stats.opened()
            return n
        } catch {
            stats.dropped(error)
            return nil
        }
    }
}

/// Seals every slice of an H.264 access unit (length-prefixed, `stream-format=avc`) before
/// the payloader; SPS/PPS/SEI pass in the clear. No key or a failed seal drops the frame.
struct VideoSealer: FrameTransform {
    let ring: KeyRing
    let stats: FrameStats

    func outputCapacity(for input: UnsafeRawBufferPointer) -> Int { VideoFrame.sealedCapacity(input) ?? 0 }

    func transform(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Int? {
        guard let key = ring.sealingKey, let n = try? VideoFrame.seal(input, key: key, into: output) else {
            stats.sealFailed()
            return nil
        }
        stats.sealed()
        return n
    }
}

/// Opens every slice of a received access unit after the depayloader. A frame with a slice
/// that does not open is dropped whole, and the sender is asked for a keyframe (rate-limited).
struct VideoOpener: FrameTransform {
    let ring: KeyRing
    let stats: FrameStats
    let times: FrameTimes
    let requestKeyFrame: @Sendable () -> Void

    func outputCapacity(for input: UnsafeRawBufferPointer) -> Int { input.count }

    func transform(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Int? {
        stats.received()
        times.mark()
        do {
            let n = try VideoFrame.open(input, keys: ring.candidates, into: output)
            stats.opened()
            return n
        } catch {
            stats.dropped(error)
            requestKeyFrame()
            return nil
        }
    }
}

/// Wall-clock time of the first and last frame a stream received, in Unix milliseconds.
final class FrameTimes: Sendable {
    private let first = Atomic<Int64>(0)
    private let last = Atomic<Int64>(0)

    func mark() {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        _ = first.compareExchange(expected: 0, desired: now, ordering: .relaxed)
        last.store(now, ordering: .relaxed)
    }

    var firstDate: Date? { Self.date(first.load(ordering: .relaxed)) }
    var lastDate: Date? { Self.date(last.load(ordering: .relaxed)) }
    private static func date(_ ms: Int64) -> Date? { ms == 0 ? nil : Date(timeIntervalSince1970: Double(ms) / 1000) }
}

extension Pad {
    /// Attaches the send side of `protection`: the sealer, or a counter of plain frames sent.
    func attachSender(_ protection: FrameProtection, stats: FrameStats) -> PadProbe {
        switch protection {
        case .e2ee(let ring): addFrameTransform(AudioSealer(ring: ring, stats: stats))
        case .none: addBufferObserver { _ in stats.sealed() }
        }
    }

    /// Attaches the video send side: the slice sealer, or a counter of plain frames sent.
    func attachVideoSender(_ protection: FrameProtection, stats: FrameStats) -> PadProbe {
        switch protection {
        case .e2ee(let ring): addFrameTransform(VideoSealer(ring: ring, stats: stats))
        case .none: addBufferObserver { _ in stats.sealed() }
        }
    }

    /// Attaches the video receive side: the slice opener, or a counter of frames passed as is.
    func attachVideoReceiver(_ protection: FrameProtection, stats: FrameStats, times: FrameTimes, keyFrames: KeyFrameRequests) -> PadProbe {
        switch protection {
        case .e2ee(let ring):
            addFrameTransform(VideoOpener(ring: ring, stats: stats, times: times, requestKeyFrame: { keyFrames.request() }))
        case .none:
            addBufferObserver { _ in
                stats.received()
                stats.opened()
                times.mark()
            }
        }
    }

    /// Attaches the receive side: the opener, or a counter of frames passed through as is.
    func attachReceiver(_ protection: FrameProtection, stats: FrameStats, times: FrameTimes) -> PadProbe {
        switch protection {
        case .e2ee(let ring): addFrameTransform(AudioOpener(ring: ring, stats: stats, times: times))
        case .none:
            addBufferObserver { _ in
                stats.received()
                stats.opened()
                times.mark()
            }
        }
    }
}
