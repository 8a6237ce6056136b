/// The first three fields of an H.264 slice header: what libwebrtc's RTP depacketizer reads
/// from every slice BEFORE a decrypting frame transform runs (webrtc
/// `PpsParser::ParsePpsIdFromSlice`, newer `PpsParser::ParseSliceHeader`). A receiver that gets
/// a wrong `ppsID` on an IDR slice drops the keyframe ("No PPS with id") and asks for another;
/// newer builds also take `firstMB == 0` as "first packet of the frame" and drop a packet whose
/// three fields do not parse. Everything past these fields is left to the decoder, which only
/// sees decrypted bytes.
struct SliceHeaderPrefix: Equatable {
    /// first_mb_in_slice, ue(v).
    var firstMB: UInt32
    /// slice_type, ue(v).
    var sliceType: UInt32
    /// pic_parameter_set_id, ue(v).
    var ppsID: UInt32
    /// Bits the three fields take in the RBSP that starts right after the NAL header byte.
    var bitCount: Int

    /// Parses `bytes` (a slice NAL unit WITHOUT its header byte, escaped as sent) the way
    /// libwebrtc does: emulation-prevention bytes (`00 00 03`) removed first, then three
    /// exp-Golomb codes; a code of 32 or more leading zeros fails, as in webrtc's
    /// `BitstreamReader::ReadExponentialGolomb`. Nil if the bytes end first.
    init?(_ bytes: UnsafeRawBufferPointer) {
        var reader = RBSPBitReader(bytes)
        guard let firstMB = reader.readUE(), let sliceType = reader.readUE(), let ppsID = reader.readUE() else { return nil }
        self.firstMB = firstMB
        self.sliceType = sliceType
        self.ppsID = ppsID
        bitCount = reader.bitsRead
    }
}

/// Reads bits from escaped H.264 bytes, skipping emulation-prevention bytes on the fly (no
/// allocation: this runs once per sealed slice and once per try).
struct RBSPBitReader {
    private let bytes: UnsafeRawBufferPointer
    private var index = 0          // next escaped byte to load
    private var zeros = 0          // zero bytes just loaded (for `00 00 03`)
    private var current: UInt8 = 0
    private var bitsLeft = 0       // unread bits of `current`
    private(set) var bitsRead = 0  // RBSP bits consumed

    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    mutating func readBit() -> UInt32? {
        if bitsLeft == 0 {
            guard index < bytes.count else { return nil }
            var byte = bytes[index]
            if zeros >= 2, byte == 3 {
                // webrtc's ParseRbsp drops the 03 of `00 00 03` and keeps what follows.
                index += 1
                zeros = 0
                guard index < bytes.count else { return nil }
                byte = bytes[index]
            }
            zeros = byte == 0 ? zeros + 1 : 0
            index += 1
            current = byte
            bitsLeft = 8
        }
        bitsLeft -= 1
        bitsRead += 1
        return UInt32(current >> UInt8(bitsLeft) & 1)
    }

    /// ue(v); nil past the end or with 32+ leading zeros (libwebrtc invalidates the read).
    mutating func readUE() -> UInt32? {
        var leadingZeros = 0
        while true {
            guard let bit = readBit() else { return nil }
            if bit == 1 { break }
            leadingZeros += 1
            if leadingZeros >= 32 { return nil }
        }
        var value: UInt64 = 0
        for _ in 0..<leadingZeros {
            guard let bit = readBit() else { return nil }
            value = value << 1 | UInt64(bit)
        }
        return UInt32(truncatingIfNeeded: (UInt64(1) << leadingZeros) + value - 1)
    }
}
