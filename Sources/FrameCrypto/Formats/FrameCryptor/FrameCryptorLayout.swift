/// What each byte range of a FrameCryptor frame is, for `sfubot frame` and for integrators
/// checking a captured frame against their client. Reads the frame's structure only: no key.
public struct FrameLayout: Sendable, Equatable {
    public struct Part: Sendable, Equatable {
        public var name: String
        public var range: Range<Int>
    }

    public var parts: [Part]

    /// The parts of a sealed FrameCryptor frame; nil if it does not have that shape.
    public static func frameCryptor(_ frame: UnsafeRawBufferPointer, kind: MediaKind, options: FrameCryptorOptions) -> FrameLayout? {
        let n = frame.count
        if FrameCryptorOpener.endsInMagic(frame, options) {
            return FrameLayout(parts: [Part(name: "unencrypted frame", range: 0..<n - options.magicBytes.count),
                                       Part(name: "magic bytes", range: n - options.magicBytes.count..<n)])
        }
        guard FrameCryptorOpener.keyIndex(of: frame, options: options) != nil else { return nil }
        var parts: [Part] = []
        let header: Int
        switch kind {
        case .audio:
            header = 1
            parts.append(Part(name: "header (Opus TOC, authenticated)", range: 0..<1))
        case .video:
            let (found, valid) = FrameCryptorH264.firstSlice(frame)
            guard valid, let slice = found, slice.nal.upperBound == n, slice.nal.count >= 4 + FrameCryptorSealer.overhead else { return nil }
            FrameCryptorH264.forEachNAL(frame, upTo: slice.prefix) { at, nal in
                parts.append(Part(name: "clear NAL unit type \(frame[nal.lowerBound] & 0x1F) (authenticated)", range: at..<nal.upperBound))
            }
            parts.append(Part(name: "slice NAL unit length", range: slice.prefix..<slice.prefix + 4))
            parts.append(Part(name: "slice NAL header and first byte (clear, authenticated)", range: slice.prefix + 4..<slice.prefix + 6))
            header = slice.prefix + 6
        }
        // Escaping never touches the trailer of a frame we seal; a frame from elsewhere may
        // have emulation bytes among the last 14, then the IV shown is escaped.
        let ivStart = n - FrameCryptorSealer.trailerCount
        let body = kind == .video ? "ciphertext and tag (RBSP-escaped)" : "ciphertext"
        if kind == .audio {
            parts.append(Part(name: body, range: header..<ivStart - FrameCryptorSealer.tagCount))
            parts.append(Part(name: "GCM tag", range: ivStart - FrameCryptorSealer.tagCount..<ivStart))
        } else {
            parts.append(Part(name: body, range: header..<ivStart))
        }
        parts.append(Part(name: "IV", range: ivStart..<n - 2))
        parts.append(Part(name: "IV length (12)", range: n - 2..<n - 1))
        parts.append(Part(name: "key index", range: n - 1..<n))
        return FrameLayout(parts: parts)
    }
}
