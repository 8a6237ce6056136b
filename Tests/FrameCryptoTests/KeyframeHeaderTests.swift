import Crypto
import FrameCrypto
import Foundation
import Testing

/// Issue 13, bug 2: libwebrtc parses slice headers before decrypting, so what it reads from a
/// sealed slice's clear byte and nonce must be what the encoder wrote. Checked with
/// `LibWebRTCSliceParser`, a copy of libwebrtc's own reads.
@Suite struct KeyframeHeaderTests {
    static let key = VideoFrameTests.key
    let frames = VideoFrameTests()

    func sealOne(_ nal: [UInt8]) throws -> [UInt8] {
        try #require(VideoFrameTests.nals(try frames.seal(VideoFrameTests.au([nal]))).first)
    }

    @Test func theModelReadsX264Headers() throws {
        #expect(LibWebRTCSliceParser.parse(nal: X264Slices.idr) == .init(firstMB: 0, sliceType: 7, ppsID: 0))
        #expect(LibWebRTCSliceParser.parse(nal: X264Slices.nonIDR) == .init(firstMB: 0, sliceType: 5, ppsID: 0))
        // The bug as Chromium saw it: x264's IDR clear bytes `65 88` followed by a nonce whose
        // first bit is 0 read as pps_id ≥ 1.
        #expect(LibWebRTCSliceParser.parse(nal: [0x65, 0x88, 0x40, 0x12]).map(\.ppsID) == 1)
        #expect(LibWebRTCSliceParser.parse(nal: [0x65, 0x88, 0x00, 0x00, 0x03, 0x00]) == nil, "32 zero bits fail the read")
    }

    /// 100,000 seals of real x264 slices (half IDR, half P): libwebrtc reads first_mb_in_slice 0,
    /// the encoder's slice_type and pic_parameter_set_id 0 from every one, and each still opens.
    /// Before the fix about half of the IDR slices read pps_id ≥ 1.
    @Test func sealedX264SlicesReadPPS0InLibWebRTC() async throws {
        var wrong = [5: 0, 1: 0]
        for i in 0..<100_000 {
            // Yields now and then: the tests share a pool of one thread per core (2 on CI), and a
            // loop that holds one for seconds delays the timers of every other test.
            if i % 256 == 0 { await Task.yield() }
            let plain = i % 2 == 0 ? X264Slices.idr : X264Slices.nonIDR
            let sealed = try sealOne(plain)
            let read = LibWebRTCSliceParser.parse(nal: sealed)
            if read != LibWebRTCSliceParser.parse(nal: plain) || read?.ppsID != 0 || read?.firstMB != 0 {
                wrong[Int(plain[0] & 0x1F), default: 0] += 1
            }
            if i % 1000 == 0 { #expect(try frames.open(VideoFrameTests.au([sealed])) == VideoFrameTests.au([plain])) }
        }
        #expect(wrong == [5: 0, 1: 0], "slices libwebrtc misreads, by NAL type")
    }

    /// Slices of any shape (other encoders, later slices of a picture): whenever the three fields
    /// end within 8 bits of the nonce, libwebrtc reads the plaintext's values from the sealed slice.
    @Test func anySliceHeaderWithinTheFirstNonceByteReadsAsThePlaintext() async throws {
        var rng = SystemRandomNumberGenerator()
        var pinnedCases = 0
        for i in 0..<20_000 {
            if i % 256 == 0 { await Task.yield() }
            var w = BitWriter()
            let fields = (UInt32.random(in: 0...(Bool.random(using: &rng) ? 3 : 1_500), using: &rng),
                          UInt32.random(in: 0...9, using: &rng), UInt32.random(in: 0...3, using: &rng))
            w.ue(fields.0); w.ue(fields.1); w.ue(fields.2)
            let headerBits = w.bitCount
            while w.bitCount < 64 * 8 { w.bit(UInt32.random(in: 0...1, using: &rng)) }
            let nal = [UInt8.random(in: 0...1, using: &rng) == 0 ? 0x65 : 0x41] + w.bytes
            let plainRead = try #require(LibWebRTCSliceParser.parse(nal: nal))
            #expect(plainRead == .init(firstMB: fields.0, sliceType: fields.1, ppsID: fields.2))
            let sealed = try sealOne(nal)
            if headerBits <= 16 {
                if headerBits > 8 { pinnedCases += 1 }
                #expect(LibWebRTCSliceParser.parse(nal: sealed) == plainRead, "fields \(fields) in \(headerBits) bits")
            }
            #expect(try frames.open(VideoFrameTests.au([sealed])) == VideoFrameTests.au([nal]))
        }
        #expect(pinnedCases > 1_000)
    }

    /// The price in nonce randomness: on x264 IDR slices exactly the first bit is fixed; the
    /// other 95 stay random (per-bit frequencies of the next 15 bits near 1/2, all nonces distinct).
    @Test func onlyTheBitsLibWebRTCReadsArePinned() async throws {
        let n = 20_000
        var ones = [Int](repeating: 0, count: 16)
        var nonces = Set<[UInt8]>()
        for i in 0..<n {
            if i % 256 == 0 { await Task.yield() }
            let sealed = try sealOne(X264Slices.idr)
            let nonce = Array(sealed[2..<14])
            nonces.insert(nonce)
            for b in 0..<16 where nonce[b / 8] >> (7 - UInt8(b % 8)) & 1 == 1 { ones[b] += 1 }
        }
        #expect(nonces.count == n)
        #expect(ones[0] == n, "the first nonce bit carries pps_id 0 (`1`)")
        for b in 1..<16 { #expect((n * 46 / 100)...(n * 54 / 100) ~= ones[b], "nonce bit \(b) set \(ones[b]) of \(n) times") }
        // x264 P slices need no pinned bit: their first nonce bit stays random.
        var pOnes = 0
        for _ in 0..<2_000 { if try sealOne(X264Slices.nonIDR)[2] & 0x80 != 0 { pOnes += 1 } }
        #expect((900...1100).contains(pOnes))
    }

    /// Leniency: slices sealed by a sender that does not pin (ECall phones, sfubot before this
    /// fix: fully random nonce) still open, whatever their first nonce bit.
    @Test func slicesSealedWithAFullyRandomNonceStillOpen() throws {
        var firstBitZero = 0
        for i in 0..<2_000 {
            let plain = i % 2 == 0 ? X264Slices.idr : X264Slices.nonIDR
            var nonceBytes = (0..<12).map { _ in UInt8.random(in: 0...255) }
            if i % 4 < 2 { nonceBytes[0] &= 0x7F }  // the nonces that made libwebrtc misread
            if nonceBytes[0] & 0x80 == 0 { firstBitZero += 1 }
            let box = try AES.GCM.seal(plain[2...], using: Self.key.symmetricKey, nonce: try AES.GCM.Nonce(data: nonceBytes))
            let sealed = Array(plain[0..<2]) + [UInt8](box.combined!)
            #expect(try frames.open(VideoFrameTests.au([sealed])) == VideoFrameTests.au([plain]))
        }
        #expect(firstBitZero >= 1_000)
    }
}

/// Writes exp-Golomb codes, MSB first, for synthetic slice headers.
struct BitWriter {
    private(set) var bytes: [UInt8] = []
    private(set) var bitCount = 0
    mutating func bit(_ b: UInt32) {
        if bitCount % 8 == 0 { bytes.append(0) }
        if b != 0 { bytes[bytes.count - 1] |= 0x80 >> UInt8(bitCount % 8) }
        bitCount += 1
    }
    mutating func ue(_ v: UInt32) {
        let x = UInt64(v) + 1
        let width = 64 - x.leadingZeroBitCount
        for _ in 0..<(width - 1) { bit(0) }
        for i in stride(from: width - 1, through: 0, by: -1) { bit(UInt32(x >> UInt64(i) & 1)) }
    }
}
