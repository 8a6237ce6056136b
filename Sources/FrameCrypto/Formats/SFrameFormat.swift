/// SFrame (RFC 9605) behind the one seam: the header's KID picks the key; the whole encoded
/// frame is sealed with empty metadata, as the RFC describes for media.
public struct SFrameFormat: IndexedFormat {
    public let suite: SFrameSuite

    public init(suite: SFrameSuite = .default) { self.suite = suite }

    public var name: FrameFormatName { .sframe }
    public var opensAnnexB: Bool { false }

    /// The key of one KID, with the one CTR sequence every stream sealed with it shares: two
    /// streams (audio, video) under one KID must never take the same CTR. It starts at a random
    /// value below 2^40 (a 5-byte CTR): a bot that restarts with the same key (a failover, a
    /// rejoin) must not reuse the nonces of its earlier run.
    public func key(from material: KeyMaterial, index: UInt64) throws(KeyError) -> SFrameSealer {
        do { return SFrameSealer(key: try SFrameKey(baseKey: material, kid: index, suite: suite), firstCounter: .random(in: 0..<(1 << 40))) } catch {
            throw KeyError.cipherUnavailable
        }
    }

    public func ratcheted(_ material: KeyMaterial) -> KeyMaterial? { nil }
    public func acceptsSealingIndex(_ index: UInt64) -> Bool { true }
    public func makeStreamState(kind: MediaKind) {}

    public func sealedCapacity(_ frame: UnsafeRawBufferPointer, kind: MediaKind) -> Int? {
        frame.isEmpty ? nil : frame.count + SFrameHeader.maxCount + suite.tagCount
    }

    public func seal(_ frame: UnsafeRawBufferPointer, kind: MediaKind, key: SFrameSealer, index: UInt64, state: Void,
                     into output: UnsafeMutableRawBufferPointer) throws(FrameError) -> Int {
        guard key.key.kid == index else { throw .noKey }
        return try key.seal(frame, into: output)
    }

    public func openedCapacity(_ frame: UnsafeRawBufferPointer, kind: MediaKind) -> Int { SFrameOpener.openedCapacity(frame) }

    public func keyIndex(of frame: UnsafeRawBufferPointer, kind: MediaKind) throws(DropReason) -> UInt64 {
        guard let kid = SFrameOpener.kid(of: frame) else { throw .tooShort }
        return kid
    }

    public func open(_ frame: UnsafeRawBufferPointer, kind: MediaKind, key: SFrameSealer,
                     into output: UnsafeMutableRawBufferPointer) throws(DropReason) -> Int {
        try SFrameOpener.open(frame, key: { _ in key.key }, into: output).count
    }

    public func replayCounter(of frame: UnsafeRawBufferPointer) -> UInt64? { SFrameOpener.header(of: frame)?.ctr }

    public func layout(of frame: UnsafeRawBufferPointer, kind: MediaKind) -> [FrameField] {
        guard let layout = SFrameLayout(frame: frame, suite: suite) else {
            return [FrameField("not an SFrame frame (its header does not parse)", 0..<frame.count)]
        }
        return layout.fields.map { FrameField($0.name, $0.range) }
    }
}
