/// A frame format whose frames name the key that sealed them (FrameCryptor's key index, SFrame's
/// KID): a receiver reads the index and opens with that one key, no ring to try. The Bot's
/// transforms and `sfubot frame` drive every such format through this one seam.
public protocol IndexedFormat: Sendable {
    /// The key a format derives from key material (PBKDF2, HKDF, …): made once per material,
    /// off the streaming threads, and shared by every frame it opens.
    associatedtype Key: Sendable
    /// What one sending stream keeps between frames (IVs, counters).
    associatedtype StreamState: Sendable

    var name: FrameFormatName { get }
    /// Whether a receiver hands this format its H.264 as Annex-B (and gets Annex-B back) rather
    /// than length-prefixed: FrameCryptor authenticates a keyframe's in-band SPS and PPS, which
    /// GStreamer's depayloader moves out of length-prefixed access units. Sealing always takes
    /// and gives length-prefixed access units.
    var opensAnnexB: Bool { get }
    /// The key of `material` at `index`; slow formats (PBKDF2) pay here, once.
    func key(from material: KeyMaterial, index: UInt64) throws(KeyError) -> Key
    /// The material one ratchet step on, for formats that ratchet (nil: this one does not).
    func ratcheted(_ material: KeyMaterial) -> KeyMaterial?
    /// Whether a sender may seal with `index` (FrameCryptor: below its key ring size).
    func acceptsSealingIndex(_ index: UInt64) -> Bool

    func makeStreamState(kind: MediaKind) -> StreamState
    func sealedCapacity(_ frame: UnsafeRawBufferPointer, kind: MediaKind) -> Int?
    func seal(_ frame: UnsafeRawBufferPointer, kind: MediaKind, key: Key, index: UInt64, state: StreamState,
              into output: UnsafeMutableRawBufferPointer) throws(FrameError) -> Int

    func openedCapacity(_ frame: UnsafeRawBufferPointer, kind: MediaKind) -> Int
    /// The key index a sealed frame names, read without opening it, so that a receiver can
    /// wait for a key it lacks. Throws what makes the frame unreadable whatever the key.
    func keyIndex(of frame: UnsafeRawBufferPointer, kind: MediaKind) throws(DropReason) -> UInt64
    /// Opens a frame with the key of the index it names.
    func open(_ frame: UnsafeRawBufferPointer, kind: MediaKind, key: Key, into output: UnsafeMutableRawBufferPointer) throws(DropReason) -> Int

    /// Each byte range of a sealed frame, named (`sfubot frame`).
    func layout(of frame: UnsafeRawBufferPointer, kind: MediaKind) -> [FrameField]

    /// The frame's counter for a replay check, in formats whose frames carry one that never
    /// repeats under a key (SFrame's CTR); nil: no check (FrameCryptor's IV is the sender's to
    /// choose, and libwebrtc checks nothing). Read only after `open` authenticated it.
    func replayCounter(of frame: UnsafeRawBufferPointer) -> UInt64?
}

extension IndexedFormat {
    public func replayCounter(of frame: UnsafeRawBufferPointer) -> UInt64? { nil }
}

/// One named byte range of a sealed frame, for people reading a capture.
public struct FrameField: Sendable, Equatable {
    public var name: String
    public var range: Range<Int>
    public init(_ name: String, _ range: Range<Int>) {
        self.name = name
        self.range = range
    }
}
