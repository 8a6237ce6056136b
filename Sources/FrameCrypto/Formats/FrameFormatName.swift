/// The frame layouts sfubot seals and opens (docs/frame-formats.md): ECall's (ECALL-WIRE §2–3),
/// libwebrtc's FrameCryptor (PQSRTC, LiveKit, flutter-webrtc) and SFrame (RFC 9605).
public enum FrameFormatName: String, CaseIterable, Sendable, Codable {
    case ecall
    case framecryptor
    case sframe

    /// Whether a frame names the key that sealed it (FrameCryptor's key index, SFrame's KID), so
    /// a receiver picks one key per frame instead of trying a ring.
    public var namesItsKey: Bool { self != .ecall }
}

/// Which encoded media a frame holds: Opus audio or an H.264 access unit (length-prefixed,
/// `stream-format=avc`, as the pipelines carry it around the transform).
public enum MediaKind: String, Sendable, Codable {
    case audio
    case video
}

/// What opening one frame of a format that names its keys found.
public struct OpenedFrame: Sendable, Equatable {
    /// Plaintext bytes written to the output.
    public var count: Int
    /// The key index (FrameCryptor) or KID (SFrame) of the key that opened it.
    public var keyIndex: UInt64

    public init(count: Int, keyIndex: UInt64) {
        self.count = count
        self.keyIndex = keyIndex
    }
}
