/// libwebrtc's FrameCryptor (PQSRTC, LiveKit) behind the one seam: the trailer's key index
/// picks the key, PBKDF2 derives it, a receiver follows the sender's ratchets within the window.
public struct FrameCryptorFormat: IndexedFormat {
    public let options: FrameCryptorOptions

    public init(options: FrameCryptorOptions) { self.options = options }

    public var name: FrameFormatName { .framecryptor }
    public var opensAnnexB: Bool { true }

    public func key(from material: KeyMaterial, index: UInt64) throws(KeyError) -> FrameCryptorKey {
        guard index < UInt64(options.keyRingSize) else { throw KeyError.indexOutOfRing(index, options.keyRingSize) }
        return FrameCryptorKey(material: material, options: options)
    }

    public func ratcheted(_ material: KeyMaterial) -> KeyMaterial? {
        try? KeyMaterial(FrameCryptorKey.ratchetMaterial(material.bytes, salt: options.ratchetSalt))
    }

    public func acceptsSealingIndex(_ index: UInt64) -> Bool { index < UInt64(options.keyRingSize) }

    public func makeStreamState(kind: MediaKind) -> FrameCryptorSealer { FrameCryptorSealer(kind: kind) }

    public func sealedCapacity(_ frame: UnsafeRawBufferPointer, kind: MediaKind) -> Int? {
        switch kind {
        case .audio: return frame.isEmpty ? nil : frame.count + FrameCryptorSealer.overhead
        case .video:
            let (slice, valid) = FrameCryptorH264.firstSlice(frame)
            guard valid, let slice, slice.nal.count >= 2 else { return nil }
            let raw = frame.count + FrameCryptorSealer.overhead
            return raw + raw / 2  // escaping inserts at most one byte per two
        }
    }

    public func seal(_ frame: UnsafeRawBufferPointer, kind: MediaKind, key: FrameCryptorKey, index: UInt64, state: FrameCryptorSealer,
                     into output: UnsafeMutableRawBufferPointer) throws(FrameError) -> Int {
        guard index < UInt64(options.keyRingSize) else { throw .noKey }
        return try state.seal(frame, key: key, keyIndex: UInt8(index), into: output)
    }

    public func openedCapacity(_ frame: UnsafeRawBufferPointer, kind: MediaKind) -> Int {
        // Video: the Annex-B frame rewritten as lengths and back (4-byte start codes).
        kind == .audio ? frame.count : 2 * FrameCryptorOpener.openedCapacity(frame, kind: kind)
    }

    /// Video frames come as Annex-B (see `opensAnnexB`); the trailer is the last bytes either way.
    public func keyIndex(of frame: UnsafeRawBufferPointer, kind: MediaKind) throws(DropReason) -> UInt64 {
        if FrameCryptorOpener.endsInMagic(frame, options) { throw .unencrypted }
        guard let index = FrameCryptorOpener.keyIndex(of: frame, options: options) else {
            throw frame.count < 1 + FrameCryptorSealer.overhead ? .tooShort : .malformed
        }
        guard Int(index) < options.keyRingSize else { throw .missingKey }
        return UInt64(index)
    }

    public func open(_ frame: UnsafeRawBufferPointer, kind: MediaKind, key: FrameCryptorKey,
                     into output: UnsafeMutableRawBufferPointer) throws(DropReason) -> Int {
        guard kind == .video else {
            return try FrameCryptorOpener.open(frame, kind: kind, options: options, key: { _ in key }, into: output).count
        }
        // Annex-B in, lengths for the opener, Annex-B out: output's halves hold the two steps.
        let half = output.count / 2
        guard half > 0, let base = output.baseAddress else { throw .malformed }
        let lengths = UnsafeMutableRawBufferPointer(start: base + half, count: output.count - half)
        guard let avcCount = FrameCryptorOpener.avc(fromAnnexB: frame, into: lengths) else { throw .malformed }
        var opened = [UInt8](repeating: 0, count: FrameCryptorOpener.openedCapacity(frame, kind: .video))
        let result = opened.withUnsafeMutableBytes { o in
            Result { () throws(DropReason) in
                try FrameCryptorOpener.open(UnsafeRawBufferPointer(rebasing: lengths[..<avcCount]), kind: .video, options: options,
                                            key: { _ in key }, into: o).count
            }
        }
        let n = try result.get()
        let annexB = AnnexB.fromLengthPrefixed(Array(opened[..<n]))
        guard annexB.count <= output.count else { throw .malformed }
        output.copyBytes(from: annexB)
        return annexB.count
    }

    public func layout(of frame: UnsafeRawBufferPointer, kind: MediaKind) -> [FrameField] {
        guard let layout = FrameLayout.frameCryptor(frame, kind: kind, options: options) else {
            return [FrameField("not a FrameCryptor frame of this kind", 0..<frame.count)]
        }
        return layout.parts.map { FrameField($0.name, $0.range) }
    }
}
