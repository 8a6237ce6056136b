@testable import FrameCrypto
import Testing

/// libwebrtc's FrameCryptor layout (webrtc-sdk `api/crypto/frame_crypto_transformer.cc`):
/// known answers and round trips. The expected frames were computed at test-writing time by an
/// independent Python port of the transformer's sealing rules (FindNaluIndices' header,
/// WriteRbsp, hashlib PBKDF2, python3-cryptography's AESGCM), not by this Swift code.
@Suite struct FrameCryptorTests {
    @Test func pbkdf2MatchesLibWebRTCsVector() {
        // frame_crypto_transformer_unittest.cc: material 0..15, salt 0..7.
        #expect(FrameCryptorKey.deriveAESKey(material: Array(0..<16), salt: Array(0..<8)).hex == "a658cd52efbacadfecdfe0a0dc574ec3")
        #expect(FrameCryptorKey.ratchetMaterial(Array(0..<16), salt: Array(0..<8)).hex
            == "a658cd52efbacadfecdfe0a0dc574ec3cedbb951a4ff3dda3bc25b61ae8365b3")
        #expect(FrameCryptorKey.deriveAESKey(material: Array(0..<32), salt: Array("PQSRTCFrameEncryptionSalt".utf8)).hex
            == "722eac2991caed1930631da6c9706bb5")
    }

    @Test func audioKnownAnswer() throws {
        let plain = [UInt8(0x78)] + Array(1...40)
        let sealed = try FC.seal(plain, kind: .audio, index: 3, iv: [UInt8](hex: "a0a1a2a3a4a5a6a7a8a9aaab"))
        #expect(sealed.hex == "780db1ebc41b063ee56c491b345f567efbb04b37b20d62a8c9f87e8f27e99a94ddbd1e5eab6f582628a364dcbdb227cf3f400c1d9a7b76dd49a0a1a2a3a4a5a6a7a8a9aaab0c03")
        let opened = try FC.open(sealed, kind: .audio, keys: [3: FC.key])
        #expect(opened.bytes == plain && opened.index == 3)
    }

    static let keyframe = [UInt8](hex: "000000076742c01f8c8d400000000468ce3c8000000047658884101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f404142434445464748494a4b4c4d4e4f00000380000000080605041122334480")

    /// SPS, PPS, an IDR slice and an SEI after it; the IV is one whose sealed bytes need an
    /// emulation byte (`00 00 03 03` in the middle), so escaping is checked too.
    @Test func videoKnownAnswer() throws {
        let sealed = try FC.seal(Self.keyframe, kind: .video, index: 0, iv: [UInt8](hex: "5a5a5a5a1122334455676a31"))
        #expect(sealed.hex == "000000076742c01f8c8d400000000468ce3c800000007265881b1711792d40b75c06937402aba4f185fc6ef3c8e662b36eac000003030f0b10ea3a968f1c6b129d51e0ff202ddd27d2e04d99a09bf940eab62ff8726b885b65a88c4aaa5dca7d59a35ae72da4cf7ea51d8bbacfbe941665947878d2ff12005003ed5a5a5a5a1122334455676a310c00")
        let opened = try FC.open(sealed, kind: .video, keys: [0: FC.key])
        #expect(opened.bytes == Self.keyframe && opened.index == 0)
    }

    /// A libwebrtc sender whose encoder wrote a 3-byte start code before the NAL unit after the
    /// slice: the opened AU has it as its own length-prefixed NAL unit.
    @Test func opensThreeByteStartCodes() throws {
        let sealed = [UInt8](hex: "0000004b419ade9b940ebe81437fc11faf428edc6b66b35d5fda360735fa4b63ec65f62e47b53cb8a6d04cdb6dc7be2227855028f4f0719631493251e40afc7be20102030405060708090a0b0c0c01")
        let opened = try FC.open(sealed, kind: .video, keys: [1: FC.key])
        #expect(opened.bytes.hex == "00000022419a202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f000000080605041122334480")
    }

    @Test(arguments: [
        [FC.sps, FC.pps, FC.idr], [FC.pSlice], [FC.sps, FC.pps, FC.idr, FC.idr2], [FC.idr, FC.sei],
        [FC.aud, FC.sps, FC.pps, FC.sei, FC.idr], [FC.pSlice, FC.sei, FC.pSlice], [[0x41, 0x9A]],
    ])
    func videoRoundTrip(_ nals: [[UInt8]]) throws {
        let plain = FC.avc(nals)
        let sealer = FrameCryptorSealer(kind: .video)
        for index: UInt8 in [0, 5] {
            let sealed = try FC.seal(plain, kind: .video, index: index, sealer: sealer)
            // Clear NAL units and the slice's first two bytes are untouched; the rest is one NAL unit.
            let clear = FC.avc(Array(nals.prefix { !NALUnits.isSlice($0[0]) }))
            let slice = nals.first { NALUnits.isSlice($0[0]) }!
            #expect(Array(sealed.prefix(clear.count)) == clear)
            #expect(Array(sealed[(clear.count + 4)..<(clear.count + 6)]) == Array(slice.prefix(2)))
            let length = sealed[clear.count..<(clear.count + 4)].reduce(0) { $0 << 8 | Int($1) }
            #expect(clear.count + 4 + length == sealed.count)
            let opened = try FC.open(sealed, kind: .video, keys: [index: FC.key])
            #expect(opened.bytes == plain && opened.index == UInt64(index))
        }
    }

    @Test(arguments: [[0x78], [0xFC, 0x01], FC.filler(160, seed: 4)])
    func audioRoundTrip(_ plain: [UInt8]) throws {
        let sealed = try FC.seal(plain, kind: .audio, index: 2)
        #expect(sealed.count == plain.count + 30 && sealed[0] == plain[0] && sealed.suffix(2) == [12, 2])
        #expect(try FC.open(sealed, kind: .audio, keys: [2: FC.key]).bytes == plain)
    }

    /// libwebrtc keeps the clear header's length in one byte: a keyframe whose SPS, PPS and SEI
    /// exceed it is sealed without its SEI (x264 writes a ~600-byte one into its first IDR).
    @Test func longSEIIsLeftOut() throws {
        let bigSEI: [UInt8] = [0x06, 0x05] + FC.filler(600, seed: 7)
        let sealed = try FC.seal(FC.avc([FC.sps, FC.pps, bigSEI, FC.idr]), kind: .video)
        #expect(try FC.open(sealed, kind: .video, keys: [0: FC.key]).bytes == FC.avc([FC.sps, FC.pps, FC.idr]))
        let tooLong: [UInt8] = [0x67] + FC.filler(300, seed: 1)
        #expect(throws: FrameError.sealFailed) { try FC.seal(FC.avc([tooLong, FC.idr]), kind: .video) }
    }

    @Test func unsealableFramesThrow() {
        #expect(throws: FrameError.sealFailed) { try FC.seal([], kind: .audio) }
        #expect(throws: FrameError.sealFailed) { try FC.seal(FC.avc([FC.sps, FC.pps]), kind: .video) }
        #expect(throws: FrameError.sealFailed) { try FC.seal([0, 0, 0, 9, 0x65], kind: .video) }
        // A fixed IV with a zero run: escaping would change the IV, and no other IV may be drawn.
        #expect(throws: FrameError.sealFailed) { try FC.seal(FC.avc([FC.pSlice]), kind: .video, iv: [UInt8](repeating: 0, count: 12)) }
    }

    @Test func layoutNamesEachPart() throws {
        let sealed = try FC.seal(FC.avc([FC.sps, FC.pps, FC.idr]), kind: .video, index: 4)
        let layout = try #require(sealed.withUnsafeBytes { FrameLayout.frameCryptor($0, kind: .video, options: FC.options) })
        #expect(layout.parts.map(\.name).last == "key index")
        #expect(layout.parts.last!.range == sealed.count - 1..<sealed.count)
        #expect(layout.parts.first!.range == 0..<(4 + FC.sps.count))
        var next = 0
        for part in layout.parts { #expect(part.range.lowerBound == next); next = part.range.upperBound }
        #expect(next == sealed.count)
    }
}

extension FrameCryptorTests {
    /// A receive pipeline takes `rtph264depay`'s byte-stream AUs (avc output would lose the
    /// keyframes' SPS and PPS) and rewrites them as length-prefixed before opening.
    @Test func byteStreamAccessUnitsOpenAfterRewriting() throws {
        let sealed = try FC.seal(Self.keyframe, kind: .video)
        // The sealed AU as libwebrtc (and rtph264depay's byte-stream output) carries it.
        var annexB: [UInt8] = []
        FrameCryptorH264.forEachNAL(sealed.withUnsafeBytes { $0 }, upTo: sealed.count) { _, nal in
            annexB += [0, 0, 0, 1] + sealed[nal]
        }
        var avc = [UInt8](repeating: 0, count: annexB.withUnsafeBytes { FrameCryptorOpener.openedCapacity($0, kind: .video) })
        let n = try #require(annexB.withUnsafeBytes { a in avc.withUnsafeMutableBytes { FrameCryptorOpener.avc(fromAnnexB: a, into: $0) } })
        #expect(Array(avc[..<n]) == sealed)
        #expect(try FC.open(Array(avc[..<n]), kind: .video, keys: [0: FC.key]).bytes == Self.keyframe)
        let notAnnexB: [UInt8] = [7, 0, 0, 1, 0x65]
        #expect(notAnnexB.withUnsafeBytes { a in avc.withUnsafeMutableBytes { FrameCryptorOpener.avc(fromAnnexB: a, into: $0) } } == nil)
    }
}
