/// Where an RTP packet's payload is (RFC 3550 §5.1).
public enum RTPPayload {
    /// The payload's range within the packet at `packet` in `bytes`: after the CSRCs and the
    /// header extension, before the padding; nil if the header does not fit or is not RTP 2.
    public static func range(in bytes: UnsafeRawBufferPointer, packet: Range<Int>) -> Range<Int>? {
        guard packet.count >= 12, bytes[packet.lowerBound] >> 6 == 2 else { return nil }
        let first = bytes[packet.lowerBound]
        var start = packet.lowerBound + 12 + Int(first & 0x0F) * 4
        if first & 0x10 != 0 {
            guard start + 4 <= packet.upperBound else { return nil }
            start += 4 + (Int(bytes[start + 2]) << 8 | Int(bytes[start + 3])) * 4
        }
        var end = packet.upperBound
        if first & 0x20 != 0 {
            guard end > start else { return nil }
            end -= Int(bytes[end - 1])
        }
        guard start <= end else { return nil }
        return start..<end
    }
}
