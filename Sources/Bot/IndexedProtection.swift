public import FrameCrypto
package import GStreamerKit
import Foundation
import Locking
package import Mjr
import Synchronization

/// The keys of a call whose frames name their key (FrameCryptor, SFrame), whatever the format:
/// how the pipeline seals and opens, and how keys handed in while the call runs get in.
public protocol IndexedKeying: Sendable {
    var formatName: FrameFormatName { get }
    /// Whether received H.264 reaches the opener as Annex-B (`IndexedFormat.opensAnnexB`).
    var opensAnnexB: Bool { get }
    /// Sets `participant`'s key at `index` (nil: a shared key); derives it on the caller's thread.
    func set(participant: String?, index: UInt64, material: KeyMaterial) throws(KeyError)
    /// Moves the key at `index` one ratchet step on; false if there is none or no ratchet.
    func ratchet(participant: String?, index: UInt64) throws(KeyError) -> Bool
    /// Participants with keys of their own and the shared indexes: never a key.
    var summary: (participants: [String: [UInt64]], shared: [UInt64]) { get }
    /// Every key held and each one set later, with its material (`--key-log`).
    func observeKeys(_ observer: @escaping @Sendable (_ participant: String?, _ index: UInt64, _ material: KeyMaterial) -> Void)
}

/// The pipeline's side of `IndexedKeying`: the transforms, generic over the format once here.
package protocol IndexedTransforms: Sendable {
    /// The same keys opening frames of a Janus recording (`mjr decrypt`).
    func mjrKeys() -> any MjrKeySource
    func sealer(kind: MediaKind, participant: String, index: SealingIndex, stats: FrameStats) -> any FrameTransform
    /// The opener of one feed; with a `hold`, frames naming a key not handed in yet are held
    /// for it (on a pad with `addHoldingFrameTransform`), else dropped at once.
    func opener(kind: MediaKind, participant: String, stats: FrameStats, times: FrameTimes, counts: KeyIndexCounts, hold: KeyHold?,
                onDrop: (@Sendable (DropReason) -> Void)?,
                onSettled: (@Sendable (_ opened: Int, _ dropped: Int) -> Void)?) -> any HoldingFrameTransform & FrameTransform
}

/// `FrameProtection.indexed`: the call's keys and who this bot is when it sends.
public struct IndexedProtection: Sendable {
    public let keys: any IndexedKeying
    let transforms: any IndexedTransforms
    /// The participant id this bot seals as (PQSRTC: its own participant id).
    public var sender: String
    /// The key index this bot seals with (`--key-index`); moved on to rotate (PQSRTC's `setKeyIndex`).
    public let sealing: SealingIndex
    /// How long frames naming a key this bot lacks wait for it to be handed in (`--key-feed`):
    /// held, in order, at most this long from the first of them (`KeyHold`).
    public var keyWait: Duration
    /// How a publisher's participant id, whose keys open its frames, is read (`--participant-id`).
    public var participantIDs: ParticipantIDRule = .displayPrefix

    /// These keys as `mjr decrypt` takes them.
    package func mjrKeys() -> any MjrKeySource { transforms.mjrKeys() }

    public init<F: IndexedFormat>(store: FrameKeyStore<F>, sender: String, sealingIndex: UInt64 = 0, keyWait: Duration = .seconds(2)) {
        self.keys = store
        self.transforms = store
        self.sender = sender
        self.sealing = SealingIndex(sealingIndex)
        self.keyWait = keyWait
    }
}

extension FrameKeyStore: IndexedKeying {
    public var formatName: FrameFormatName { format.name }
    public var opensAnnexB: Bool { format.opensAnnexB }
}

extension FrameKeyStore: IndexedTransforms {
    package func mjrKeys() -> any MjrKeySource { MjrIndexedKeys(self) }

    package func sealer(kind: MediaKind, participant: String, index: SealingIndex, stats: FrameStats) -> any FrameTransform {
        IndexedSealer(store: self, kind: kind, participant: participant, index: index, state: format.makeStreamState(kind: kind), stats: stats)
    }

    package func opener(kind: MediaKind, participant: String, stats: FrameStats, times: FrameTimes, counts: KeyIndexCounts, hold: KeyHold?,
                        onDrop: (@Sendable (DropReason) -> Void)?,
                        onSettled: (@Sendable (_ opened: Int, _ dropped: Int) -> Void)?) -> any HoldingFrameTransform & FrameTransform {
        Opener(IndexedOpening(store: self, kind: kind, participant: participant, counts: counts),
               stats: stats, times: times, hold: hold, onDrop: onDrop, onSettled: onSettled)
    }
}

/// Seals each frame with the sender's key at its index, looked up per frame so a key handed in
/// or ratcheted mid-call seals the next frame. No key, or a failure: the frame is dropped.
struct IndexedSealer<Format: IndexedFormat>: FrameTransform {
    let store: FrameKeyStore<Format>
    let kind: MediaKind
    let participant: String
    let index: SealingIndex
    let state: Format.StreamState
    let stats: FrameStats
    var metrics: FrameMetrics

    init(store: FrameKeyStore<Format>, kind: MediaKind, participant: String, index: SealingIndex, state: Format.StreamState, stats: FrameStats) {
        self.store = store
        self.kind = kind
        self.participant = participant
        self.index = index
        self.state = state
        self.stats = stats
        metrics = FrameMetrics(kind: kind.rawValue, format: store.format.name.rawValue)
    }

    func outputCapacity(for input: UnsafeRawBufferPointer) -> Int { store.format.sealedCapacity(input, kind: kind) ?? 0 }

    func transform(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Int? {
        let index = self.index.value
        guard let key = store.key(participant: participant, index: index),
              let n = try? store.format.seal(input, kind: kind, key: key, index: index, state: state, into: output) else {
            stats.sealFailed()
            metrics.sealFailed()
            return nil
        }
        stats.sealed()
        metrics.sealed()
        return n
    }
}

/// Opens each frame with the key of the index it names. A frame naming a key not handed in
/// yet fails `missing_key`, which the opener's hold keeps it for (the race between key
/// delivery and the first frames loses nothing, and no streaming thread waits).
struct IndexedOpening<Format: IndexedFormat>: FrameOpening {
    let store: FrameKeyStore<Format>
    let kind: MediaKind
    let participant: String
    let counts: KeyIndexCounts
    let replay = ReplayWindows()

    var labels: (kind: String, format: String) { (kind.rawValue, store.format.name.rawValue) }
    var keyPending: DropReason { .missingKey }

    func outputCapacity(for input: UnsafeRawBufferPointer) -> Int { store.format.openedCapacity(input, kind: kind) }

    func open(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) throws(DropReason) -> Int {
        let index = try store.format.keyIndex(of: input, kind: kind)
        guard let key = store.key(participant: participant, index: index) else { throw .missingKey }
        let n = try store.format.open(input, kind: kind, key: key, into: output)
        // Authenticated now, so the counter is the sender's: an old or repeated one is a replay.
        if let counter = store.format.replayCounter(of: input), !replay.accept(index: index, counter: counter) { throw .replayed }
        counts.opened(index: index)
        return n
    }
}

/// The key index a sender seals with, changed while it runs (a rotation): read per frame.
public final class SealingIndex: Sendable {
    private let index: Atomic<UInt64>
    public init(_ index: UInt64) { self.index = Atomic(index) }
    public var value: UInt64 { index.load(ordering: .relaxed) }
    public func set(_ index: UInt64) { self.index.store(index, ordering: .relaxed) }
}

/// One track's replay windows, one per key index (SFrame: per KID, whose CTR never repeats).
/// Per track, not per participant: a sender that comes back as a new feed (a restarted app
/// picks a new random CTR start) starts a new window, where a remembered one would drop it all.
final class ReplayWindows: Sendable {
    private let windows = Locked<[UInt64: SFrameReplayWindow]>([:])

    func accept(index: UInt64, counter: UInt64) -> Bool {
        let window = windows.withLock { w in
            if let found = w[index] { return found }
            let made = SFrameReplayWindow()
            w[index] = made
            return made
        }
        return window.accept(ctr: counter)
    }
}
