/// The leading nonce bits a sender fixes so that libwebrtc, which parses every slice header
/// before the decrypting transform runs, reads the same first_mb_in_slice, slice_type and
/// pic_parameter_set_id from a sealed slice as from the plaintext (ECALL-WIRE §3 keeps only
/// the NAL header and one more byte clear).
///
/// x264's IDR slice starts `65 88 84…`: the clear byte 0x88 holds first_mb_in_slice 0 (`1`) and
/// slice_type 7 (`0001000`), so pic_parameter_set_id 0 (`1`) is the FIRST BIT OF THE NONCE; left
/// random, libwebrtc reads pps_id ≥ 1 half the time and drops the keyframe. x264's P slice
/// (`41 9a…`) holds all three fields in the clear byte: nothing is pinned.
///
/// Cost: the pinned bits are copied from the plaintext, so they are not random; with at most
/// `maxBits` pinned, at least 88 of the 96 nonce bits stay random (1 bit pinned on x264 IDR
/// slices: 95). The receiver needs nothing: the nonce is read as sent.
struct NoncePin {
    /// Beyond this (a slice far into the picture: first_mb_in_slice takes many bits) the slice
    /// is sealed with a fully random nonce, as before: nonce uniqueness matters more than the
    /// header of a slice sfubot's one-slice pipelines never send.
    static let maxBits = 8

    /// How many leading nonce bits are fixed (1...maxBits).
    let count: Int
    /// Their values, in the high `count` bits.
    let bits: UInt8
    /// What libwebrtc must read from the sealed slice.
    let expected: SliceHeaderPrefix

    /// Nil when no bit needs pinning (all three fields in the clear byte), when the plaintext
    /// header does not parse, or when more than `maxBits` would be needed.
    init?(slice nal: UnsafeRawBufferPointer) {
        guard nal.count > 1 else { return nil }
        let afterHeader = UnsafeRawBufferPointer(rebasing: nal[1...])
        guard let header = SliceHeaderPrefix(afterHeader) else { return nil }
        let count = header.bitCount - 8
        guard count > 0, count <= Self.maxBits else { return nil }
        // RBSP byte 1 is always escaped byte 1 (an emulation byte needs two zeros before it),
        // so the plaintext's bits 8..<bitCount land on the nonce's first byte as they are.
        var reader = RBSPBitReader(afterHeader)
        var bits: UInt8 = 0
        for i in 0..<header.bitCount {
            guard let bit = reader.readBit() else { return nil }
            if i >= 8 { bits = bits << 1 | UInt8(bit) }
        }
        self.count = count
        self.bits = bits << (8 - count)
        expected = header
    }

    /// Overwrites the leading `count` bits of a fresh random nonce.
    func apply(to nonce: UnsafeMutableRawPointer) {
        let mask = ~(UInt8(0xFF) >> count)
        let byte = nonce.load(as: UInt8.self)
        nonce.storeBytes(of: byte & ~mask | bits, as: UInt8.self)
    }

    /// Whether libwebrtc's parse of the sealed slice (`body`: from the clear byte on) gives the
    /// plaintext's three fields. True by construction today; checked per try so a future change
    /// to `maxBits` or the layout cannot silently send headers libwebrtc misreads.
    func holds(inSealed body: UnsafeRawBufferPointer) -> Bool {
        SliceHeaderPrefix(body) == expected
    }
}
