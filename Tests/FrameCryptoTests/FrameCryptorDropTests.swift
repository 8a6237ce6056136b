@testable import FrameCrypto
import Synchronization
import Testing

/// What a FrameCryptor receiver refuses, and the ratchet a receiver follows.
@Suite struct FrameCryptorDropTests {
    static let frame = FC.avc([FC.sps, FC.pps, FC.idr])

    @Test func wrongKeyIsNoKeyAndDerivesItsRatchetsOnce() throws {
        let sealed = try FC.seal(Self.frame, kind: .video)
        let wrong = FrameCryptorKey(material: try KeyMaterial(Array(repeating: 7, count: 32)), options: FC.options)
        for _ in 0..<3 {
            #expect(FC.dropReason { _ = try FC.open(sealed, kind: .video, keys: [0: wrong]) } == .noKey)
        }
        // Eight steps derived for the first frame, none for the next ones; the key is unchanged.
        #expect(wrong.derivedSteps.load(ordering: .relaxed) == 8)
        #expect(wrong.material.bytes == Array(repeating: 7, count: 32))
    }

    @Test func ratchetedSenderOpensAndIsAdopted() throws {
        let sender = FrameCryptorKey(material: FC.material, options: FC.options)
        for _ in 0..<3 { sender.ratchet() }
        let receiver = FrameCryptorKey(material: FC.material, options: FC.options)
        receiver.deriveRatchetWindow()
        #expect(receiver.derivedSteps.load(ordering: .relaxed) == 8)
        let audio = [UInt8(0x78)] + FC.filler(50, seed: 1)
        let sealed = try FC.seal(audio, kind: .audio, key: sender)
        #expect(try FC.open(sealed, kind: .audio, keys: [0: receiver]).bytes == audio)
        #expect(receiver.material == sender.material)
        // Opening derived nothing more; the next frame opens with the adopted key at once.
        let steps = receiver.derivedSteps.load(ordering: .relaxed)
        #expect(steps == 8)
        #expect(try FC.open(try FC.seal(Self.frame, kind: .video, key: sender), kind: .video, keys: [0: receiver]).bytes == Self.frame)
        #expect(receiver.derivedSteps.load(ordering: .relaxed) == steps)
    }

    @Test func ratchetBeyondTheWindowIsNoKeyAndKeepsTheKey() throws {
        let options = FrameCryptorOptions(ratchetSalt: FC.options.ratchetSalt, ratchetWindow: 2)
        let sender = FrameCryptorKey(material: FC.material, options: options)
        for _ in 0..<3 { sender.ratchet() }
        let receiver = FrameCryptorKey(material: FC.material, options: options)
        let sealed = try FC.seal([0x78, 1, 2, 3], kind: .audio, key: sender)
        #expect(FC.dropReason { _ = try FC.open(sealed, kind: .audio, options: options, keys: [0: receiver]) } == .noKey)
        #expect(receiver.material == FC.material)
    }

    @Test func magicBytesAreUnencrypted() throws {
        let magic = Array("PQSRTCMagicBytes".utf8)
        for kind in [MediaKind.audio, .video] {
            let frame = (kind == .audio ? [0x78, 1, 2] : Self.frame) + magic
            #expect(FC.dropReason { _ = try FC.open(frame, kind: kind, keys: [0: FC.key]) } == .unencrypted)
            #expect(frame.withUnsafeBytes { FrameCryptorOpener.keyIndex(of: $0, options: FC.options) } == nil)
        }
        // Without magic bytes configured, such a frame is just not a sealed one.
        let plainOptions = FrameCryptorOptions(ratchetSalt: FC.options.ratchetSalt)
        #expect(FC.dropReason { _ = try FC.open([0x78, 1] + magic, kind: .audio, options: plainOptions, keys: [0: FC.key]) } == .malformed)
    }

    @Test func missingKeys() throws {
        let sealed = try FC.seal(Self.frame, kind: .video, index: 1)
        #expect(sealed.withUnsafeBytes { FrameCryptorOpener.keyIndex(of: $0, options: FC.options) } == 1)
        #expect(FC.dropReason { _ = try FC.open(sealed, kind: .video, keys: [0: FC.key]) } == .missingKey)
        // An index past the ring is missing even if the caller has a key for it.
        let far = try FC.seal([0x78, 9], kind: .audio, index: 20)
        #expect(FC.dropReason { _ = try FC.open(far, kind: .audio, keys: [20: FC.key]) } == .missingKey)
    }

    @Test func tamperedHeaderOrBodyIsNoKey() throws {
        var sealed = try FC.seal(Self.frame, kind: .video)
        sealed[6] ^= 1  // inside the SPS: authenticated, not encrypted
        #expect(FC.dropReason { _ = try FC.open(sealed, kind: .video, keys: [0: FC.key]) } == .noKey)
        var audio = try FC.seal([0x78, 1, 2, 3], kind: .audio)
        audio[0] ^= 0x80
        #expect(FC.dropReason { _ = try FC.open(audio, kind: .audio, keys: [0: FC.key]) } == .noKey)
    }

    /// Escaping: no start code in a sealed slice NAL unit, and its last 14 bytes are the raw IV,
    /// 12 and the key index (so libwebrtc's older receivers, which read them before
    /// unescaping, find the same IV). Plaintext with long zero runs, many frames.
    @Test func sealedSliceHoldsNoStartCode() throws {
        let sealer = FrameCryptorSealer(kind: .video)
        for i in 0..<400 {
            let slice: [UInt8] = [0x65, 0x88] + (0..<(40 + i)).map { UInt8($0 % 5 == 0 ? 1 : 0) } + [0x80]
            let sealed = try FC.seal(FC.avc([FC.sps, FC.pps, slice]), kind: .video, index: 3, sealer: sealer)
            let nal = Array(sealed[(FC.sps.count + FC.pps.count + 12)...])
            for j in 0..<(nal.count - 2) where nal[j] == 0 && nal[j + 1] == 0 {
                #expect(nal[j + 2] >= 3, "start code at \(j) of frame \(i)")
            }
            var raw = [UInt8](repeating: 0, count: nal.count)
            let n = nal.dropFirst(2).withUnsafeBytes { FrameCryptorH264.unescape($0, to: raw.withUnsafeMutableBytes { $0.baseAddress! }) }
            raw.removeLast(raw.count - n)
            #expect(nal.suffix(14) == raw.suffix(14) && nal.suffix(2) == [12, 3])
        }
    }

    /// Every truncation (and garbage of every short length) is refused without a crash.
    @Test func truncatedFramesNeverCrash() throws {
        let video = try FC.seal(Self.frame, kind: .video)
        let audio = try FC.seal(FC.filler(40, seed: 2), kind: .audio)
        for length in 0..<40 {
            #expect(FC.dropReason { _ = try FC.open(Array(audio.prefix(length)), kind: .audio, keys: [0: FC.key]) } != nil)
            #expect(FC.dropReason { _ = try FC.open(Array(video.prefix(length)), kind: .video, keys: [0: FC.key]) } != nil)
            // The slice NAL unit cut to `length` bytes with its length prefix kept consistent.
            let clear = 8 + FC.sps.count + FC.pps.count
            let cut = Array(video.prefix(clear)) + withUnsafeBytes(of: UInt32(length).bigEndian, Array.init)
                + Array(video[(clear + 4)...].prefix(length))
            if length > 0, cut.count == clear + 4 + length {
                #expect(FC.dropReason { _ = try FC.open(cut, kind: .video, keys: [0: FC.key]) } != nil)
            }
            for tail: [UInt8] in [[], [12, 0], [12, 200]] {
                let junk = FC.filler(length, seed: length) + tail
                for kind in [MediaKind.audio, .video] {
                    #expect(FC.dropReason { _ = try FC.open(junk, kind: kind, keys: [0: FC.key]) } != nil)
                    _ = junk.withUnsafeBytes { FrameLayout.frameCryptor($0, kind: kind, options: FC.options) }
                }
            }
        }
    }
}

extension FrameCryptorDropTests {
    /// libwebrtc's WriteRbsp and ParseRbsp as written there, byte by byte.
    static func writeRbsp(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [], zeros = 0
        for b in bytes {
            if b <= 3, zeros >= 2 { out.append(3); zeros = 0 }
            out.append(b)
            zeros = b == 0 ? zeros + 1 : 0
        }
        return out
    }

    static func parseRbsp(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [], i = 0
        while i < bytes.count {
            if bytes.count - i >= 3, bytes[i] == 0, bytes[i + 1] == 0, bytes[i + 2] == 3 {
                out += [0, 0]
                i += 3
            } else {
                out.append(bytes[i])
                i += 1
            }
        }
        return out
    }

    /// The memchr-driven escaping equals libwebrtc's byte loops, in place too.
    @Test func escapingMatchesLibWebRTCsLoops() {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<3000 {
            let bytes = (0..<Int.random(in: 0...40, using: &rng)).map { _ in [0, 0, 0, 1, 2, 3, 4, 0xFF].randomElement(using: &rng)! as UInt8 }
            let expected = Self.writeRbsp(bytes)
            var buffer = [UInt8](repeating: 0xEE, count: bytes.count * 2 + 2)
            let slack = bytes.count + 2
            buffer.replaceSubrange(slack..<(slack + bytes.count), with: bytes)
            let n = buffer.withUnsafeMutableBytes { FrameCryptorH264.escape($0.baseAddress! + slack, count: bytes.count, to: $0.baseAddress!) }
            #expect(Array(buffer[..<n]) == expected, "\(bytes)")
            let counted = bytes.withUnsafeBytes { FrameCryptorH264.escapes($0, tail: 0) }
            #expect(counted.count == expected.count - bytes.count)
            var back = expected
            let m = back.withUnsafeMutableBytes { b in FrameCryptorH264.unescape(UnsafeRawBufferPointer(b), to: b.baseAddress!) }
            #expect(Array(back[..<m]) == Self.parseRbsp(expected) && Array(back[..<m]) == bytes)
            var raw = bytes
            let k = raw.withUnsafeMutableBytes { b in FrameCryptorH264.unescape(UnsafeRawBufferPointer(b), to: b.baseAddress!) }
            #expect(Array(raw[..<k]) == Self.parseRbsp(bytes))
        }
    }
}

/// libwebrtc parses every slice header's first three fields before its decrypting transform
/// runs; with FrameCryptor only a slice's second byte is clear, and x264's IDR slices put
/// pic_parameter_set_id in the next (sealed) bit. Sealing draws IVs until it reads as sent.
@Suite struct FrameCryptorSliceHeaderTests {
    @Test func sealedX264SlicesReadAsSentInLibWebRTC() async throws {
        var wrong = [5: 0, 1: 0]
        let sealer = FrameCryptorSealer(kind: .video)
        for i in 0..<4_000 {
            if i % 256 == 0 { await Task.yield() }
            let plain = i % 2 == 0 ? X264Slices.idr : X264Slices.nonIDR
            let au = FC.avc([FC.sps, FC.pps, plain])
            var out = [UInt8](repeating: 0, count: au.withUnsafeBytes { sealer.sealedCapacity($0)! })
            let n = try au.withUnsafeBytes { a in try out.withUnsafeMutableBytes { o in
                try sealer.seal(a, key: FC.key, keyIndex: 0, into: o)
            } }
            // The sealed slice is the last length-prefixed NAL unit.
            let slice = Array(out[(4 + FC.sps.count + 4 + FC.pps.count + 4)..<n])
            let read = LibWebRTCSliceParser.parse(nal: slice)
            if read == nil || read != LibWebRTCSliceParser.parse(nal: plain) { wrong[Int(plain[0] & 0x1F), default: 0] += 1 }
        }
        #expect(wrong == [5: 0, 1: 0], "slices libwebrtc misreads, by NAL type")
    }
}
