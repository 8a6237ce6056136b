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
    func opener(kind: MediaKind, participant: String, stats: FrameStats, times: FrameTimes, counts: KeyIndexCounts,
                keyWait: Duration, onDrop: (@Sendable (DropReason) -> Void)?) -> any FrameTransform
}

/// `FrameProtection.indexed`: the call's keys and who this bot is when it sends.
public struct IndexedProtection: Sendable {
    public let keys: any IndexedKeying
    let transforms: any IndexedTransforms
    /// The participant id this bot seals as (PQSRTC: its own participant id).
    public var sender: String
    /// The key index this bot seals with (`--key-index`); moved on to rotate (PQSRTC's `setKeyIndex`).
    public let sealing: SealingIndex
    /// How long frames naming a key this bot lacks wait for it to be handed in (`--key-feed`).
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

    package func opener(kind: MediaKind, participant: String, stats: FrameStats, times: FrameTimes, counts: KeyIndexCounts,
                       keyWait: Duration, onDrop: (@Sendable (DropReason) -> Void)?) -> any FrameTransform {
        IndexedOpener(store: self, kind: kind, participant: participant, stats: stats, times: times, counts: counts,
                      wait: KeyWait(limit: keyWait), onDrop: onDrop)
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
/// yet waits for it (on this streaming thread, up to the track's wait budget), so the race
/// between key delivery and the first frames loses nothing.
struct IndexedOpener<Format: IndexedFormat>: FrameTransform {
    let store: FrameKeyStore<Format>
    let kind: MediaKind
    let participant: String
    let stats: FrameStats
    let times: FrameTimes
    let counts: KeyIndexCounts
    let wait: KeyWait
    let onDrop: (@Sendable (DropReason) -> Void)?
    let metrics: FrameMetrics
    let replay = ReplayWindows()

    init(store: FrameKeyStore<Format>, kind: MediaKind, participant: String, stats: FrameStats, times: FrameTimes,
         counts: KeyIndexCounts, wait: KeyWait, onDrop: (@Sendable (DropReason) -> Void)?) {
        self.store = store
        self.kind = kind
        self.participant = participant
        self.stats = stats
        self.times = times
        self.counts = counts
        self.wait = wait
        self.onDrop = onDrop
        metrics = FrameMetrics(kind: kind.rawValue, format: store.format.name.rawValue)
    }

    func outputCapacity(for input: UnsafeRawBufferPointer) -> Int { store.format.openedCapacity(input, kind: kind) }

    func transform(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Int? {
        stats.received()
        times.mark()
        do throws(DropReason) {
            let index = try store.format.keyIndex(of: input, kind: kind)
            let key = store.key(participant: participant, index: index)
                ?? wait.deadline(for: index).flatMap { store.waitForKey(participant: participant, index: index, until: $0) }
            guard let key else { throw .missingKey }
            let n = try store.format.open(input, kind: kind, key: key, into: output)
            // Authenticated now, so the counter is the sender's: an old or repeated one is a replay.
            if let counter = store.format.replayCounter(of: input), !replay.accept(index: index, counter: counter) { throw .replayed }
            wait.clear()
            counts.opened(index: index)
            stats.opened()
            metrics.opened()
            return n
        } catch {
            stats.dropped(error)
            metrics.dropped(error)
            onDrop?(error)
            return nil
        }
    }
}

/// The key index a sender seals with, changed while it runs (a rotation): read per frame.
public final class SealingIndex: Sendable {
    private let index: Atomic<UInt64>
    public init(_ index: UInt64) { self.index = Atomic(index) }
    public var value: UInt64 { index.load(ordering: .relaxed) }
    public func set(_ index: UInt64) { self.index.store(index, ordering: .relaxed) }
}

/// One track's budget for waiting on a missing key: the first frame naming a key index this
/// bot lacks starts a wait of `limit`; frames naming it after that are dropped at once (counted
/// `missing_key`) until a frame opens again. A frame that opens ends the episode.
final class KeyWait: Sendable {
    private let limit: Duration
    private let episode = Locked<(index: UInt64, deadline: Date)?>(nil)
    /// Whether an episode is open: read on every frame that opens, so the lock is taken only
    /// after a key was missing, never per frame.
    private let open = Atomic<Bool>(false)

    init(limit: Duration) { self.limit = limit }

    /// Until when a frame naming `index` may wait; nil once the episode's time is spent.
    func deadline(for index: UInt64) -> Date? {
        let now = Date()
        let deadline = episode.withLock { (e: inout (index: UInt64, deadline: Date)?) -> Date in
            if let e, e.index == index { return e.deadline }
            let d = now.addingTimeInterval(Double(limit.components.seconds) + Double(limit.components.attoseconds) / 1e18)
            e = (index, d)
            return d
        }
        open.store(true, ordering: .relaxed)
        return deadline > now ? deadline : nil
    }

    func clear() {
        guard open.load(ordering: .relaxed) else { return }
        open.store(false, ordering: .relaxed)
        episode.withLock { $0 = nil }
    }
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
