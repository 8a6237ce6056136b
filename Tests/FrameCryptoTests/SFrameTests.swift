import Testing
@testable import FrameCrypto

/// SFrame sealing and opening beyond the RFC's vectors: every suite both ways, the drops a
/// receiver must make, and the sender's counter.
@Suite struct SFrameTests {
    static let baseKey = try! KeyMaterial(hex: "00112233445566778899aabbccddeeff")
    static let otherKey = try! KeyMaterial(hex: "ffeeddccbbaa99887766554433221100")

    static func frame(_ count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) } }

    @Test(arguments: SFrameSuite.allCases)
    func roundTripsEverySize(suite: SFrameSuite) throws {
        let key = try SFrameKey(baseKey: Self.baseKey, kid: 9, suite: suite)
        let sealer = SFrameSealer(key: key)
        for count in [0, 1, 15, 16, 17, 100, 1200, 65_536] {
            let plain = Self.frame(count), metadata: [UInt8] = count % 2 == 0 ? [] : [1, 2, 3]
            let sealed = try sealer.sealArray(plain, metadata: metadata)
            // KID 9 takes one byte after the config byte; CTRs 0-7 fit in it.
            #expect(sealed.count == 2 + count + suite.tagCount)
            #expect(Array(sealed[2..<2 + count]) != plain || count < 15)
            #expect(try SFrameOpener.openArray(sealed, metadata: metadata, keys: [9: key]) == plain, "\(suite.name) \(count)")
        }
    }

    @Test(arguments: SFrameSuite.allCases)
    func wrongKeyOrSuiteIsNoKey(suite: SFrameSuite) throws {
        let sealed = try SFrameSealer(key: SFrameKey(baseKey: Self.baseKey, kid: 3, suite: suite)).sealArray(Self.frame(100))
        let wrong = try SFrameKey(baseKey: Self.otherKey, kid: 3, suite: suite)
        #expect(throws: DropReason.noKey) { try SFrameOpener.openArray(sealed, keys: [3: wrong]) }
        for other in SFrameSuite.allCases where other != suite {
            let right = try SFrameKey(baseKey: Self.baseKey, kid: 3, suite: other)
            #expect(throws: DropReason.noKey) { try SFrameOpener.openArray(sealed, keys: [3: right]) }
        }
        // A key derived for another KID, handed back for this one.
        let otherKid = try SFrameKey(baseKey: Self.baseKey, kid: 4, suite: suite)
        #expect(throws: DropReason.noKey) { try SFrameOpener.openArray(sealed, keys: [3: otherKid]) }
    }

    @Test func unknownKidIsMissingKeyAndReadable() throws {
        let key = try SFrameKey(baseKey: Self.baseKey, kid: 0x1234, suite: .default)
        let sealed = try SFrameSealer(key: key).sealArray(Self.frame(40))
        #expect(sealed.withUnsafeBytes { SFrameOpener.kid(of: $0) } == 0x1234)
        #expect(throws: DropReason.missingKey) { try SFrameOpener.openArray(sealed, keys: [7: key]) }
        let opened = try sealed.withUnsafeBytes { f in
            var out = [UInt8](repeating: 0, count: SFrameOpener.openedCapacity(f))
            return try out.withUnsafeMutableBytes { try SFrameOpener.open(f, key: { $0 == 0x1234 ? key : nil }, into: $0) }
        }
        #expect(opened == OpenedFrame(count: 40, keyIndex: 0x1234))
    }

    @Test(arguments: SFrameSuite.allCases)
    func everyTruncationIsDroppedWithoutCrashing(suite: SFrameSuite) throws {
        // A long KID and CTR, so cuts land inside the header, the ciphertext and the tag.
        let kid: UInt64 = 0x0102_0304_0506_0708
        let key = try SFrameKey(baseKey: Self.baseKey, kid: kid, suite: suite)
        let sealed = try SFrameSealer(key: key, firstCounter: 0xA0B0_C0D0_E0F0).sealArray(Self.frame(30))
        #expect(sealed.count == 1 + 8 + 6 + 30 + suite.tagCount)
        for cut in 0..<min(64, sealed.count) {
            let part = Array(sealed[..<cut])
            let headerCount = 1 + 8 + 6
            let expected: DropReason = cut < headerCount + suite.tagCount ? .tooShort : .noKey
            #expect(throws: expected, "cut \(cut)") { try SFrameOpener.openArray(part, keys: [kid: key]) }
            #expect(part.withUnsafeBytes { SFrameOpener.kid(of: $0) } == (cut < headerCount ? nil : kid))
            _ = part.withUnsafeBytes { SFrameOpener.openedCapacity($0) }
        }
        // Arbitrary bytes of every length: dropped, never a crash.
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        for count in 0..<64 {
            let junk = (0..<count).map { _ in
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                return UInt8(truncatingIfNeeded: state >> 33)
            }
            #expect(throws: (any Error).self) { try SFrameOpener.openArray(junk, keys: [:], anyKey: key) }
        }
    }

    @Test(arguments: SFrameSuite.allCases)
    func everyBitFlipIsNoKey(suite: SFrameSuite) throws {
        let key = try SFrameKey(baseKey: Self.baseKey, kid: 300, suite: suite)
        let metadata: [UInt8] = [9, 8, 7]
        let sealed = try SFrameSealer(key: key, firstCounter: 1000).sealArray(Self.frame(100), metadata: metadata)
        // Header, ciphertext and tag: every bit. The key is offered for any KID a flip makes.
        for bit in 0..<sealed.count * 8 {
            var flipped = sealed
            flipped[bit / 8] ^= 1 << (bit % 8)
            #expect(throws: DropReason.noKey, "bit \(bit)") { try SFrameOpener.openArray(flipped, metadata: metadata, keys: [:], anyKey: key) }
        }
        var otherMetadata = metadata
        otherMetadata[1] ^= 0x40
        #expect(throws: DropReason.noKey) { try SFrameOpener.openArray(sealed, metadata: otherMetadata, keys: [300: key]) }
    }

    @Test func counterIncrementsAndHeaderStaysMinimal() throws {
        let sealer = SFrameSealer(key: try SFrameKey(baseKey: Self.baseKey, kid: 5, suite: .default))
        for ctr in UInt64(0)..<20 {
            let sealed = try sealer.sealArray(Self.frame(10))
            let header = try #require(sealed.withUnsafeBytes { SFrameOpener.header(of: $0) })
            #expect(header.kid == 5 && header.ctr == ctr)
            #expect(Array(sealed[..<header.count]) == SFrameHeader(kid: 5, ctr: ctr).bytes)
            #expect(header.count == (ctr < 8 ? 1 : 2))
        }
        // Byte-length boundaries of the CTR field.
        for (first, counts) in [(UInt64(0xFF), [2, 3]), (0xFFFF, [3, 4]), (0xFFFF_FFFF, [5, 6]), (0x00FF_FFFF_FFFF_FFFF, [8, 9])] {
            let s = SFrameSealer(key: sealer.key, firstCounter: first)
            #expect(try [s.sealArray([]), s.sealArray([])].map { $0.count - 16 } == counts, "from \(first)")
        }
    }

    @Test func sealingStopsBeforeTheCounterWraps() throws {
        let sealer = SFrameSealer(key: try SFrameKey(baseKey: Self.baseKey, kid: 1, suite: .default), firstCounter: .max - 2)
        let last = try sealer.sealArray([1, 2, 3])
        #expect(last.withUnsafeBytes { SFrameOpener.header(of: $0)?.ctr } == UInt64.max - 2)
        _ = try sealer.sealArray([1, 2, 3])
        for _ in 0..<3 { #expect(throws: FrameError.sealFailed) { try sealer.sealArray([1, 2, 3]) } }
    }

    @Test func concurrentSealsNeverShareACounter() async throws {
        let sealer = SFrameSealer(key: try SFrameKey(baseKey: Self.baseKey, kid: 2, suite: .aes128CtrHmacSha256_80))
        let counters = try await withThrowingTaskGroup(of: [UInt64].self) { group in
            for _ in 0..<4 {
                group.addTask {
                    try (0..<500).map { _ in try sealer.sealArray(Self.frame(50)).withUnsafeBytes { SFrameOpener.header(of: $0)!.ctr } }
                }
            }
            return try await group.reduce(into: [UInt64]()) { $0 += $1 }
        }
        #expect(Set(counters).count == 2000 && counters.max() == 1999)
    }

    @Test func outputTooSmallIsAnErrorNotAnOverflow() throws {
        let key = try SFrameKey(baseKey: Self.baseKey, kid: 1, suite: .default)
        let sealer = SFrameSealer(key: key)
        let plain = Self.frame(20)
        var small = [UInt8](repeating: 0, count: 1 + 20 + 15)
        #expect(throws: FrameError.outputTooSmall) { try plain.withUnsafeBytes { p in try small.withUnsafeMutableBytes { try sealer.seal(p, into: $0) } } }
        let sealed = try sealer.sealArray(plain)
        var short = [UInt8](repeating: 0, count: 19)
        #expect(throws: DropReason.malformed) {
            try sealed.withUnsafeBytes { f in try short.withUnsafeMutableBytes { try SFrameOpener.open(f, key: { _ in key }, into: $0) } }
        }
    }

    @Test func suiteNamesAndLayout() throws {
        for suite in SFrameSuite.allCases {
            #expect(SFrameSuite(name: suite.name) == suite && SFrameSuite(name: suite.name.lowercased()) == suite)
        }
        #expect(SFrameSuite(name: "AES_128_GCM") == nil && SFrameSuite.default.name == "AES_128_GCM_SHA256_128")
        let v = try #require(SFrameVectors.frames.first { $0.suite == 4 })
        let layout = try #require(SFrameLayout(frame: [UInt8](hex: v.ct), suite: .aes128GcmSha256_128))
        #expect(layout.fields.map(\.name) == ["config", "kid", "ctr", "ciphertext", "tag"])
        #expect(layout.fields.map(\.range) == [0..<1, 1..<3, 3..<5, 5..<26, 26..<42])
        #expect(layout.config == "X=1 KLEN=2 Y=1 CLEN=2" && layout.header.kid == 0x123 && layout.header.ctr == 0x4567)
        let small = try #require(SFrameLayout(frame: [0x35] + [UInt8](repeating: 0, count: 4), suite: .aes128CtrHmacSha256_32))
        #expect(small.fields.map(\.name) == ["config", "tag"] && small.config == "X=0 KID=3 Y=0 CTR=5")
        #expect(SFrameLayout(frame: [0x35, 0, 0], suite: .aes128CtrHmacSha256_32) == nil)
    }
}

extension SFrameSealer {
    func sealArray(_ plain: [UInt8], metadata: [UInt8] = []) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: plain.withUnsafeBytes { sealedCapacity($0) })
        let count = try plain.withUnsafeBytes { p in
            try metadata.withUnsafeBytes { m in try out.withUnsafeMutableBytes { try seal(p, metadata: m, into: $0) } }
        }
        return Array(out[..<count])
    }
}

extension SFrameOpener {
    /// Opens with the key of `keys` for the frame's KID, or `anyKey` for any KID.
    static func openArray(_ frame: [UInt8], metadata: [UInt8] = [], keys: [UInt64: SFrameKey], anyKey: SFrameKey? = nil) throws -> [UInt8] {
        try frame.withUnsafeBytes { f in
            var out = [UInt8](repeating: 0, count: openedCapacity(f))
            let opened = try metadata.withUnsafeBytes { m in
                try out.withUnsafeMutableBytes { try open(f, metadata: m, key: { keys[$0] ?? anyKey }, into: $0) }
            }
            return Array(out[..<opened.count])
        }
    }
}
