import Crypto
import FrameCrypto
import Foundation
import Testing

/// The ECall slice transform on length-prefixed (avc) access units.
@Suite struct VideoFrameTests {
    static let key = try! CallKey(bytes: Array(0..<32) as [UInt8])

    /// Length-prefixes NAL units (4-byte big-endian), as GStreamer's avc format carries them.
    static func au(_ nals: [[UInt8]]) -> [UInt8] {
        var out: [UInt8] = []
        for n in nals {
            let c = UInt32(n.count)
            out += [UInt8(c >> 24), UInt8(c >> 16 & 0xFF), UInt8(c >> 8 & 0xFF), UInt8(c & 0xFF)]
            out += n
        }
        return out
    }
    static func nals(_ au: [UInt8]) -> [[UInt8]] {
        var out: [[UInt8]] = [], i = 0
        while i + 4 <= au.count {
            let n = Int(au[i]) << 24 | Int(au[i + 1]) << 16 | Int(au[i + 2]) << 8 | Int(au[i + 3])
            out.append(Array(au[(i + 4)..<(i + 4 + n)]))
            i += 4 + n
        }
        return out
    }

    func seal(_ au: [UInt8], key: CallKey = key) throws -> [UInt8] {
        let capacity = try #require(au.withUnsafeBytes { VideoFrame.sealedCapacity($0) })
        var out = [UInt8](repeating: 0, count: capacity)
        let result: Result<Int, FrameError> = au.withUnsafeBytes { a in
            out.withUnsafeMutableBytes { o in Result { () throws(FrameError) in try VideoFrame.seal(a, key: key, into: o) } }
        }
        return Array(out[..<(try result.get())])
    }

    func open(_ au: [UInt8], ring: KeyRing = KeyRing(current: key)) throws(DropReason) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: au.count)
        let candidates = ring.candidates
        let result: Result<Int, DropReason> = au.withUnsafeBytes { a in
            out.withUnsafeMutableBytes { o in Result { () throws(DropReason) in try VideoFrame.open(a, keys: candidates, into: o) } }
        }
        return Array(out[..<(try result.get())])
    }

    static let sps: [UInt8] = [0x67, 0x42, 0xE0, 0x1F, 0x8C, 0x8D, 0x40]
    static let pps: [UInt8] = [0x68, 0xCE, 0x3C, 0x80]

    /// Bytes computed with Python `cryptography`: 65 88 ‖ nonce ‖ AES-GCM(rest of the NAL) ‖ tag.
    @Test func opensKnownAnswer() throws {
        let sealed = [UInt8](hex: "65880102030405060708090a0b0c81ea7b2a0f555235e01e4e9834e7f90af98da76f71a6c4b5")
        let opened = try open(Self.au([Self.sps, sealed]))
        #expect(Self.nals(opened) == [Self.sps, [UInt8](hex: "6588840021ffe3c1a2b3")])
    }

    @Test func onlySlicesAreSealedAndTheirFirstTwoBytesStayClear() throws {
        let idr: [UInt8] = [0x65, 0x88] + Array(repeating: 0xAB, count: 300)
        let nonIDR: [UInt8] = [0x41, 0x9A] + Array(repeating: 0x11, count: 50)
        let sei: [UInt8] = [0x06, 0x05, 0x01, 0x80]
        let sealed = Self.nals(try seal(Self.au([Self.sps, Self.pps, sei, idr, nonIDR])))
        #expect(sealed[0] == Self.sps && sealed[1] == Self.pps && sealed[2] == sei, "non-slice NAL units pass in the clear")
        #expect(sealed[3].count == idr.count + 28 && sealed[3][0..<2] == idr[0..<2])
        #expect(sealed[4].count == nonIDR.count + 28 && sealed[4][0..<2] == nonIDR[0..<2])
        #expect(sealed[3][2...].firstRange(of: Array(repeating: UInt8(0xAB), count: 16)) == nil, "the slice body is not in the clear")
        // The tail is nonce ‖ ciphertext ‖ tag under the call key (checked with swift-crypto).
        let box = try AES.GCM.SealedBox(combined: sealed[3][2...])
        #expect(try AES.GCM.open(box, using: Self.key.symmetricKey) == Data(idr[2...]))
    }

    /// 100,000 random slices: none of the sealed ones can be cut by an Annex-B parser, and
    /// every one opens to what was sealed.
    @Test func sealedSlicesNeverHoldAStartCode() async throws {
        var rng = SystemRandomNumberGenerator()
        var zerosInInput = 0
        for i in 0..<100_000 {
            // Yields now and then: the tests share a pool of one thread per core (2 on CI), and a
            // loop that holds one for seconds delays the timers of every other test.
            if i % 256 == 0 { await Task.yield() }
            let count = Int.random(in: 2...(i % 100 == 0 ? 3000 : 200), using: &rng)
            // Zero-heavy plaintext, as real slices have, to make ciphertext start codes likely if unsafe.
            var slice: [UInt8] = [i % 2 == 0 ? 0x65 : 0x41] + (1..<count).map { _ in UInt8.random(in: 0...3, using: &rng) == 0 ? 0 : UInt8.random(in: 0...255, using: &rng) }
            if slice.count > 1, slice[1] == 0 { zerosInInput += 1 }
            if i % 7 == 0 { slice[1] = 0 }  // a zero clear byte right before the nonce
            let sealed = try seal(Self.au([slice]))
            let nal = Self.nals(sealed)[0]
            let safe = nal[1...].withUnsafeBytes { !NALUnits.breaksAnnexB($0) }
            #expect(safe, "slice \(i) sealed into bytes an Annex-B parser would cut")
            if !safe { return }
            // And an Annex-B parser gets exactly this NAL back.
            let stream: [UInt8] = [0, 0, 0, 1] + nal + [0, 0, 1] + Self.pps
            let parsed = stream.withUnsafeBytes { NALUnits.annexB($0) }
            #expect(parsed.map { Array(stream[$0]) } == [nal, Self.pps])
            #expect(try open(sealed) == Self.au([slice]))
        }
        #expect(zerosInInput > 0)
    }

    @Test func wrongKeyTruncationAndGarbageAreDropsNotCrashes() async throws {
        let au = Self.au([Self.sps, [0x65, 0x88] + Array(repeating: 7, count: 100)])
        let sealed = try seal(au)
        #expect(throws: DropReason.noKey) { try open(sealed, ring: KeyRing(current: .random())) }
        #expect(throws: DropReason.noKey) { try open(au) }  // a clear slice with E2EE on: dropped
        #expect(throws: DropReason.malformed) { try open(Array(sealed.dropLast(3))) }
        #expect(throws: DropReason.tooShort) { try open(Self.au([[0x65, 0x88, 1, 2, 3]])) }

        // Fuzz: truncated, reordered, bit-flipped and random input never crashes and never
        // yields more bytes than came in.
        var rng = SystemRandomNumberGenerator()
        let slices = try (0..<20).map { _ in try seal(Self.au([Self.sps, Self.pps, [0x65, 0x88] + (0..<Int.random(in: 0...400, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }])) }
        for i in 0..<20_000 {
            if i % 256 == 0 { await Task.yield() }
            var input = slices[i % slices.count]
            switch i % 4 {
            case 0: input = Array(input.prefix(Int.random(in: 0...input.count, using: &rng)))
            case 1: input = Self.au(Self.nals(input).shuffled(using: &rng))
            case 2: for _ in 0..<3 { input[Int.random(in: 0..<input.count, using: &rng)] ^= UInt8.random(in: 1...255, using: &rng) }
            default: input = (0..<Int.random(in: 0...600, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            }
            if let out = try? open(input) { #expect(out.count <= input.count) }
        }
    }

    @Test func annexBScanning() {
        let stream: [UInt8] = [0, 0, 0, 1, 0x67, 1, 2, 0, 0, 1, 0x68, 3, 0, 0, 0, 0, 1, 0x65, 9]
        let units = stream.withUnsafeBytes { NALUnits.annexB($0) }.map { Array(stream[$0]) }
        #expect(units == [[0x67, 1, 2], [0x68, 3], [0x65, 9]])
        for (bytes, breaks) in [([1, 0, 0, 1, 5], true), ([1, 0, 0, 0, 5], true), ([1, 0, 0, 2, 5], false), ([1, 2, 0], true), ([0, 0, 2], false)] as [([UInt8], Bool)] {
            #expect(bytes.withUnsafeBytes { NALUnits.breaksAnnexB($0) } == breaks, "\(bytes)")
        }
    }
}
