/// Key material as a user or a host app hands it in (`--key-hex`, `--key-map`, `--key-feed`):
/// the bytes a frame format derives its cipher keys from (FrameCryptor: PBKDF2; SFrame: HKDF;
/// ECall: the 32 bytes are the key). Its bytes are never printed.
public struct KeyMaterial: Sendable, Hashable, CustomStringConvertible {
    /// The most bytes a key material may hold.
    public static let maxCount = 512
    public let bytes: [UInt8]

    public init(_ bytes: [UInt8]) throws(KeyError) {
        guard (1...Self.maxCount).contains(bytes.count) else { throw KeyError.wrongLength(bytes.count) }
        self.bytes = bytes
    }

    /// Key material from hex characters (white space around them ignored).
    public init(hex: String) throws(KeyError) {
        let text = Array(hex.utf8.drop { $0 == 0x20 || ($0 >= 0x09 && $0 <= 0x0D) }
            .reversed().drop { $0 == 0x20 || ($0 >= 0x09 && $0 <= 0x0D) }.reversed())
        guard !text.isEmpty, text.count % 2 == 0 else { throw KeyError.notHex }
        var bytes = [UInt8]()
        bytes.reserveCapacity(text.count / 2)
        var i = 0
        while i < text.count {
            guard let high = CallKey.nibble(text[i]), let low = CallKey.nibble(text[i + 1]) else { throw KeyError.notHex }
            bytes.append(high << 4 | low)
            i += 2
        }
        try self.init(bytes)
    }

    /// The material as an ECall call key: exactly 32 bytes.
    public var callKey: CallKey {
        get throws(KeyError) { try CallKey(bytes: bytes) }
    }

    public var description: String { "KeyMaterial(<redacted>)" }
}
