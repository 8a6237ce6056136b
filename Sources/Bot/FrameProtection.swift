public import FrameCrypto
package import Foundation
package import GStreamerKit
import Synchronization

/// Whether media is sealed with the call key (ECall's E2EE), with each sender's own key, or
/// sent as is.
public enum FrameProtection: Sendable {
    case e2ee(KeyRing)
    /// Receive side of per-sender keying: each feed is opened with its sender's keys, chosen
    /// once when the feed is attached (never a map lookup per frame). A sender seals with
    /// `.e2ee` holding its own newest key; sealing with `.perSender` drops every frame.
    case perSender(KeyMap)
    /// A format whose frames name their key (FrameCryptor, SFrame): each frame is opened with
    /// the key of the index it names, its sender's own or the shared one.
    case indexed(IndexedProtection)
    case none

    /// The frame layout on the wire, for the manifest and the logs (nil: no encryption).
    public var formatName: FrameFormatName? {
        switch self {
        case .e2ee, .perSender: .ecall
        case .indexed(let p): p.keys.formatName
        case .none: nil
        }
    }

    public var isEncrypted: Bool { if case .none = self { false } else { true } }

    /// The `stream-format` received H.264 has around the opener: Annex-B for formats that
    /// authenticate a keyframe's SPS and PPS (the avc depayloader moves them out), else avc.
    /// Where a sender's SPS and PPS go (the `config-interval` of the parser before the sealer
    /// and of the payloader after it): FrameCryptor authenticates them with the keyframe, so the
    /// parser puts them in the access unit the sealer sees and the payloader adds none; ECall
    /// leaves them out of the access unit and has the payloader send them before each IDR.
    package var h264SendIntervals: [String: String] {
        if case .indexed(let p) = self, p.keys.opensAnnexB { ["parse_interval": "-1", "pay_interval": "0"] }
        else { ["parse_interval": "0", "pay_interval": "-1"] }
    }

    package var receivedH264Format: String {
        if case .indexed(let p) = self, p.keys.opensAnnexB { "byte-stream" } else { "avc" }
    }
}

/// A frame format of ECALL-WIRE: how a frame is sealed and opened, whole (audio) or per
/// slice (video).
package protocol FrameFormat: Sendable {
    /// The `kind` label of the frame counters: "audio" or "video".
    static var kind: String { get }
    static var mediaKind: MediaKind { get }
    static func sealedCapacity(_ frame: UnsafeRawBufferPointer) -> Int
    static func seal(_ frame: UnsafeRawBufferPointer, key: CallKey, into output: UnsafeMutableRawBufferPointer) throws(FrameError) -> Int
    static func openedCapacity(_ frame: UnsafeRawBufferPointer) -> Int
    static func open(_ frame: UnsafeRawBufferPointer, keys: KeyRing.Candidates, into output: UnsafeMutableRawBufferPointer) throws(DropReason) -> Int
}

/// Opus frames: sealed whole (ECALL-WIRE §2).
package enum AudioFormat: FrameFormat {
    package static let kind = "audio"
    package static let mediaKind = MediaKind.audio
    package static func sealedCapacity(_ frame: UnsafeRawBufferPointer) -> Int { frame.count + AudioFrame.overhead }
    package static func seal(_ frame: UnsafeRawBufferPointer, key: CallKey, into output: UnsafeMutableRawBufferPointer) throws(FrameError) -> Int {
        try AudioFrame.seal(frame, key: key, into: output)
    }
    package static func openedCapacity(_ frame: UnsafeRawBufferPointer) -> Int { max(0, frame.count - AudioFrame.overhead) }
    package static func open(_ frame: UnsafeRawBufferPointer, keys: KeyRing.Candidates, into output: UnsafeMutableRawBufferPointer) throws(DropReason) -> Int {
        try AudioFrame.open(frame, keys: keys, into: output)
    }
}

/// H.264 access units, length-prefixed: slices sealed, SPS/PPS/SEI clear (ECALL-WIRE §3).
package enum VideoFormat: FrameFormat {
    package static let kind = "video"
    package static let mediaKind = MediaKind.video
    package static func sealedCapacity(_ frame: UnsafeRawBufferPointer) -> Int { VideoFrame.sealedCapacity(frame) ?? 0 }
    package static func seal(_ frame: UnsafeRawBufferPointer, key: CallKey, into output: UnsafeMutableRawBufferPointer) throws(FrameError) -> Int {
        try VideoFrame.seal(frame, key: key, into: output)
    }
    package static func openedCapacity(_ frame: UnsafeRawBufferPointer) -> Int { frame.count }
    package static func open(_ frame: UnsafeRawBufferPointer, keys: KeyRing.Candidates, into output: UnsafeMutableRawBufferPointer) throws(DropReason) -> Int {
        try VideoFrame.open(frame, keys: keys, into: output)
    }
}

/// Seals each encoded frame before the payloader. With no key, or if sealing fails, the frame
/// is dropped: nothing leaves in the clear.
struct Sealer<Format: FrameFormat>: FrameTransform {
    let ring: KeyRing
    let stats: FrameStats
    var metrics = FrameMetrics(kind: Format.kind, format: FrameFormatName.ecall.rawValue)

    func outputCapacity(for input: UnsafeRawBufferPointer) -> Int { Format.sealedCapacity(input) }

    func transform(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Int? {
        guard let key = ring.sealingKey, let n = try? Format.seal(input, key: key, into: output) else {
            stats.sealFailed()
            metrics.sealFailed()
            return nil
        }
        stats.sealed()
        metrics.sealed()
        return n
    }
}

/// Wall-clock time of the first and last frame a stream received, in Unix milliseconds.
package final class FrameTimes: Sendable {
    package init() {}
    private let first = Atomic<Int64>(0)
    private let last = Atomic<Int64>(0)
    /// How long the first frame had waited before it was marked (milliseconds).
    private let firstWaited = Atomic<Int64>(0)

    package func mark() {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        _ = first.compareExchange(expected: 0, desired: now, ordering: .relaxed)
        last.store(now, ordering: .relaxed)
    }

    /// The first frame arrived `waited` before it was marked: the direct receive path holds a
    /// stream's first packets up to 2 s for lip sync, and the first frame is when it came.
    package func firstFrameWaited(_ waited: Duration) {
        firstWaited.store(Int64(waited.seconds * 1000), ordering: .relaxed)
    }

    package var firstDate: Date? {
        Self.date(first.load(ordering: .relaxed)).map { $0.addingTimeInterval(-Double(firstWaited.load(ordering: .relaxed)) / 1000) }
    }
    package var lastDate: Date? { Self.date(last.load(ordering: .relaxed)) }
    private static func date(_ ms: Int64) -> Date? { ms == 0 ? nil : Date(timeIntervalSince1970: Double(ms) / 1000) }
}

extension Pad {
    /// Attaches the send side of `protection` for frames of `format`: the sealer, or a counter
    /// of plain frames sent.
    package func attachSender<F: FrameFormat>(_ protection: FrameProtection, _ format: F.Type, stats: FrameStats) -> PadProbe {
        switch protection {
        case .e2ee(let ring): return addFrameTransform(Sealer<F>(ring: ring, stats: stats))
        // Whose key would it be? The caller resolves its own participant id to `.e2ee` first;
        // an empty ring here fails closed (every frame dropped, counted as seal failures).
        case .perSender: return addFrameTransform(Sealer<F>(ring: KeyRing(), stats: stats))
        case .indexed(let p): return addFrameTransform(p.transforms.sealer(kind: F.mediaKind, participant: p.sender, index: p.sealing, stats: stats))
        case .none:
            let metrics = FrameMetrics(kind: F.kind, format: "none")
            return addBufferObserver { _ in
                stats.sealed()
                metrics.sealed()
            }
        }
    }

    /// Attaches the receive side: the opener, or a counter of frames passed through as is.
    /// With per-sender keys the feed's sender is found by `display` (`<participantId>:<name>`)
    /// or `feedID`, and `openedBy` counts which of its key indexes opened each frame.
    /// `attach`: how the opener goes on this pad; by default a frame transform. Load bots pass
    /// FastPath's `addRTPPayloadConsumer` for a pad of RTP whose payload is one frame (Opus):
    /// each packet's frame is opened, counted and dropped there.
    package func attachReceiver<F: FrameFormat>(_ protection: FrameProtection, _ format: F.Type, stats: FrameStats, times: FrameTimes,
                                        display: String = "", feedID: Int64? = nil, openedBy: KeyIndexCounts? = nil,
                                        attach custom: ((any FrameTransform) -> PadProbe)? = nil,
                                        onDrop: (@Sendable (DropReason) -> Void)? = nil) -> PadProbe {
        func attach(_ t: any FrameTransform) -> PadProbe { custom?(t) ?? addFrameTransform(t) }
        switch protection {
        case .e2ee(let ring): return attach(Opener(ring: ring, F.self, stats: stats, times: times, onDrop: onDrop))
        case .perSender(let map):
            let sender = map.keys(display: display, feedID: feedID)
            return attach(SenderOpener<F>(
                sender: sender, counts: openedBy ?? KeyIndexCounts(sender), stats: stats, times: times, onDrop: onDrop))
        case .indexed(let p):
            // The sender's participant id, by default as PQSRTC names key owners: the display's "<id>:" part, else the feed id.
            let participant = p.participantIDs.id(display: display, feedID: feedID)
            // Nothing is held here (no pad to push held frames on): a frame naming a key not
            // handed in yet is dropped at once. Recorders and relays hold (`attachRecordingReceiver`).
            return attach(p.transforms.opener(kind: F.mediaKind, participant: participant, stats: stats, times: times,
                                              counts: openedBy ?? KeyIndexCounts(), hold: nil, onDrop: onDrop, onSettled: nil))
        case .none:
            let metrics = FrameMetrics(kind: F.kind, format: "none")
            return addBufferObserver { _ in
                stats.received()
                stats.opened()
                metrics.opened()
                times.mark()
            }
        }
    }
}

extension FrameProtection {
    /// The send side for frames of `format` as a transform of its own, for a
    /// sender that seals without a pad (load publishers' frame path): the sealer, which gives
    /// nil for a frame it cannot seal (no key: nothing may be sent), or with no E2EE a copy,
    /// counted as `attachSender`'s observer counts.
    package func senderTransform<F: FrameFormat>(_ format: F.Type, stats: FrameStats) -> any FrameTransform {
        switch self {
        case .e2ee(let ring): Sealer<F>(ring: ring, stats: stats)
        case .perSender: Sealer<F>(ring: KeyRing(), stats: stats)
        case .indexed(let p): p.transforms.sealer(kind: F.mediaKind, participant: p.sender, index: p.sealing, stats: stats)
        case .none: PlainCopy(stats: stats, metrics: FrameMetrics(kind: F.kind, format: "none"))
        }
    }
}

/// No E2EE: the frame as is, counted as sent.
private struct PlainCopy: FrameTransform {
    let stats: FrameStats
    let metrics: FrameMetrics

    func outputCapacity(for input: UnsafeRawBufferPointer) -> Int { input.count }

    func transform(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Int? {
        output.copyMemory(from: input)
        stats.sealed()
        metrics.sealed()
        return input.count
    }
}
