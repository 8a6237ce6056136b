/// The SFrame header (RFC 9605 §4.3): a config byte `X KKK Y CCC`, then the KID and the CTR as
/// minimal big-endian integers when they do not fit in the config byte's three bits.
public struct SFrameHeader: Sendable, Equatable {
    /// The key ID: which base key sealed the frame.
    public let kid: UInt64
    /// The frame counter the nonce is made from.
    public let ctr: UInt64
    /// Bytes after the config byte that hold the KID (0: the KID is in the config byte).
    public let kidCount: Int
    /// Bytes after the KID that hold the CTR (0: the CTR is in the config byte).
    public let ctrCount: Int

    /// The longest header: config byte, 8-byte KID, 8-byte CTR.
    public static let maxCount = 17

    /// Bytes the header takes on the wire.
    public var count: Int { 1 + kidCount + ctrCount }

    /// The header a sender writes: each value in the config byte if below 8, else in the fewest bytes.
    public init(kid: UInt64, ctr: UInt64) {
        self.kid = kid
        self.ctr = ctr
        kidCount = Self.extendedCount(kid)
        ctrCount = Self.extendedCount(ctr)
    }

    /// Reads the header at the start of `bytes`; nil if the bytes end inside it.
    /// A longer-than-needed KID or CTR encoding is read as is: the header is authenticated
    /// exactly as sent (it is the AAD), so another spelling cannot be forged, only written.
    public init?(parsing bytes: UnsafeRawBufferPointer) {
        guard let config = bytes.first else { return nil }
        let kidExtended = config & 0x80 != 0, kidBits = UInt64(config >> 4 & 0x07)
        let ctrExtended = config & 0x08 != 0, ctrBits = UInt64(config & 0x07)
        kidCount = kidExtended ? Int(kidBits) + 1 : 0
        ctrCount = ctrExtended ? Int(ctrBits) + 1 : 0
        guard bytes.count >= 1 + kidCount + ctrCount else { return nil }
        kid = kidExtended ? Self.readBigEndian(bytes, at: 1, count: kidCount) : kidBits
        ctr = ctrExtended ? Self.readBigEndian(bytes, at: 1 + kidCount, count: ctrCount) : ctrBits
    }

    /// Writes the header's `count` bytes at `p` (the caller made room).
    public func encode(into p: UnsafeMutableRawPointer) {
        let kidField = kidCount == 0 ? UInt8(kid) << 4 : 0x80 | UInt8(kidCount - 1) << 4
        let ctrField = ctrCount == 0 ? UInt8(ctr) : 0x08 | UInt8(ctrCount - 1)
        p.storeBytes(of: kidField | ctrField, as: UInt8.self)
        Self.writeBigEndian(kid, count: kidCount, at: p + 1)
        Self.writeBigEndian(ctr, count: ctrCount, at: p + 1 + kidCount)
    }

    /// The encoded header as an array (tools and tests; the frame path uses `encode(into:)`).
    public var bytes: [UInt8] {
        [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            encode(into: UnsafeMutableRawPointer(buffer.baseAddress!))
            initialized = count
        }
    }

    /// 0 for a value the config byte holds (0-7), else its minimal big-endian length (1-8).
    static func extendedCount(_ value: UInt64) -> Int {
        value < 8 ? 0 : (64 - value.leadingZeroBitCount + 7) / 8
    }

    private static func readBigEndian(_ bytes: UnsafeRawBufferPointer, at offset: Int, count: Int) -> UInt64 {
        var value: UInt64 = 0
        for i in offset..<offset + count { value = value << 8 | UInt64(bytes[i]) }
        return value
    }

    private static func writeBigEndian(_ value: UInt64, count: Int, at p: UnsafeMutableRawPointer) {
        for i in 0..<count {
            p.storeBytes(of: UInt8(truncatingIfNeeded: value >> (8 * UInt64(count - 1 - i))), toByteOffset: i, as: UInt8.self)
        }
    }
}
