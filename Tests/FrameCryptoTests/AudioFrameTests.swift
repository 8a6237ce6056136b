import Crypto
import Foundation
import FrameCrypto
import Testing

/// The ECall audio frame, pinned to bytes computed by an independent AES-GCM
/// (Python `cryptography`), so a change in layout or cipher use cannot pass.
@Suite struct AudioFrameTests {
    static let key = try! CallKey(bytes: Array(0..<32) as [UInt8])
    static let nonce = [UInt8](hex: "cafebabefacedbaddecaf888")

    static let vectors: [(plain: String, sealed: String)] = [
        ("fc", "ffcafebabefacedbaddecaf88876549cc1a28dde33f506008a3bc4562f1f"),
        ("78a1b2c3d4e5f60718293a4b5c6d7e8f90",
         "ffcafebabefacedbaddecaf888f20212e57e9fb91c5e2267962770f7b09dd12eedb81ad36fe072136627fe42ce7f"),
        ("", "ffcafebabefacedbaddecaf8885b0a77e3716cc7e86cf71b26dee7d5a4"),
    ]

    func seal(_ plain: [UInt8], key: CallKey = key, nonce: [UInt8]? = nil) throws -> [UInt8] {
        try AudioFrame.sealed(plain, key: key, nonce: nonce)
    }

    func open(_ frame: [UInt8], ring: KeyRing) throws(DropReason) -> [UInt8] {
        try AudioFrame.opened(frame, keys: ring.candidates)
    }

    @Test func sealMatchesKnownAnswers() throws {
        for v in Self.vectors {
            #expect(try seal([UInt8](hex: v.plain), nonce: Self.nonce).hex == v.sealed)
        }
    }

    @Test func openRecoversKnownAnswers() throws {
        let ring = KeyRing(current: Self.key)
        for v in Self.vectors {
            #expect(try open([UInt8](hex: v.sealed), ring: ring).hex == v.plain)
        }
    }

    @Test func layoutIsMarkerNonceCiphertextTag() throws {
        let plain = [UInt8](repeating: 0xAB, count: 120)
        let a = try seal(plain), b = try seal(plain)
        #expect(a.count == plain.count + 29)
        #expect(a[0] == 0xFF)
        #expect(a[1..<13] != b[1..<13], "every frame draws a fresh nonce")
        #expect(a[13..<133] != b[13..<133])
    }

    /// The frame path (OpenSSL) against swift-crypto's AES-GCM, both ways, on random frames.
    @Test func agreesWithSwiftCrypto() throws {
        var rng = SystemRandomNumberGenerator()
        for size in [0, 1, 15, 16, 17, 120, 1000, 5000] {
            let key = CallKey.random()
            let plain = (0..<size).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let frame = try seal(plain, key: key)
            let box = try AES.GCM.SealedBox(combined: frame[1...])
            #expect(try AES.GCM.open(box, using: key.symmetricKey) == Data(plain))

            let theirs = try AES.GCM.seal(plain, using: key.symmetricKey)
            #expect(try open([0xFF] + Array(theirs.combined!), ring: KeyRing(current: key)) == plain)
        }
    }

    @Test func noncesNeverRepeat() throws {
        var seen = Set<[UInt8]>()
        for _ in 0..<10_000 { seen.insert(Array(try seal([1, 2, 3])[1..<13])) }
        #expect(seen.count == 10_000)
    }

    @Test func noMarkerIsDropped() {
        var frame = (try? seal([1, 2, 3])) ?? []
        frame[0] = 0xFC  // a plain Opus TOC byte
        #expect(throws: DropReason.noMarker) { try open(frame, ring: KeyRing(current: Self.key)) }
        #expect(throws: DropReason.noMarker) { try open([], ring: KeyRing(current: Self.key)) }
    }

    @Test func truncatedFrameIsDropped() throws {
        let frame = try seal([1, 2, 3])
        for n in 1..<AudioFrame.overhead {
            #expect(throws: DropReason.tooShort) { try open(Array(frame[..<n]), ring: KeyRing(current: Self.key)) }
        }
    }

    @Test func wrongKeyIsDropped() throws {
        let frame = try seal([UInt8](repeating: 7, count: 60))
        #expect(throws: DropReason.noKey) { try open(frame, ring: KeyRing(current: CallKey.random())) }
        #expect(throws: DropReason.noKey) { try open(frame, ring: KeyRing()) }
    }

    @Test func tamperedFrameIsDropped() throws {
        var frame = try seal([UInt8](repeating: 7, count: 60))
        frame[20] ^= 1
        #expect(throws: DropReason.noKey) { try open(frame, ring: KeyRing(current: Self.key)) }
    }

    @Test func outputTooSmallDoesNotSeal() {
        var out = [UInt8](repeating: 0, count: 10)
        let plain = [UInt8](repeating: 1, count: 5)
        let result: Result<Int, FrameError> = plain.withUnsafeBytes { p in
            out.withUnsafeMutableBytes { o in Result { () throws(FrameError) in try AudioFrame.seal(p, key: Self.key, into: o) } }
        }
        #expect(throws: FrameError.outputTooSmall) { try result.get() }
    }

    @Test func statsCountEachReason() {
        let stats = FrameStats()
        stats.received(); stats.received(); stats.opened()
        stats.dropped(.noKey); stats.dropped(.noMarker); stats.dropped(.noMarker)
        let s = stats.snapshot
        #expect(s.received == 2 && s.opened == 1)
        #expect(s.dropped == ["no_marker": 2, "too_short": 0, "no_key_opens": 1, "malformed": 0, "missing_key": 0, "unencrypted": 0, "replayed": 0])
        #expect(s.droppedTotal == 3)
    }
}
