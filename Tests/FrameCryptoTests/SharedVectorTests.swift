import FrameCrypto
import Foundation
import Testing

/// Frames sealed by this Swift code, opened by the Chromium page's JavaScript frame code
/// (Tests/Chromium/ecall-frames.js, WebCrypto) and by Swift: the two implementations must agree
/// on the bytes (issue 13). The vectors live in Tests/Chromium/vectors.json; regenerate them with
/// `SFUBOT_WRITE_VECTORS=1 swift test --filter SharedVectorTests` (fresh random nonces).
@Suite(.serialized) struct SharedVectorTests {
    static let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Chromium/vectors.json")
    static let key = try! CallKey(hex: "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f")
    static let otherKey = try! CallKey(hex: "ff0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f")

    /// Bytes without a zero: plaintext NAL units must not hold a start code of their own.
    static func filler(_ count: Int, seed: Int) -> [UInt8] { (0..<count).map { UInt8(($0 * 7 + seed) % 251 + 1) } }
    static let sps: [UInt8] = [0x67, 0x42, 0xE0, 0x1F, 0x8C, 0x8D, 0x40]
    static let pps: [UInt8] = [0x68, 0xCE, 0x3C, 0x80]
    static let aud: [UInt8] = [0x09, 0xF0]
    static let sei: [UInt8] = [0x06, 0x05, 0x04, 0x11, 0x22, 0x33, 0x44, 0x80]
    static let idr: [UInt8] = [0x65, 0x88, 0x84] + filler(300, seed: 3)
    static let pSlice: [UInt8] = [0x41, 0x9A] + filler(90, seed: 5)
    static let videoPlain: [[[UInt8]]] = [[sps, pps, idr], [pSlice], [aud, sps, pps, sei, idr], [[0x41, 0x9A]]]
    static let audioPlain: [[UInt8]] = [[0x78], filler(3, seed: 1), filler(60, seed: 2), filler(160, seed: 4)]

    struct Vectors: Codable {
        struct Audio: Codable { var plain: String?; var sealed: String; var mustFail: Bool }
        struct Video: Codable { var plain: [String]?; var sealed: [String]; var mustFail: Bool }
        var key: String
        var audio: [Audio]
        var video: [Video]
    }

    static func sealAudio(_ plain: [UInt8], key: CallKey) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: plain.count + AudioFrame.overhead)
        let n = try plain.withUnsafeBytes { p in try out.withUnsafeMutableBytes { o in try AudioFrame.seal(p, key: key, into: o) } }
        return Array(out[..<n])
    }
    static func openAudio(_ sealed: [UInt8]) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: sealed.count)
        let candidates = KeyRing(current: key).candidates
        let n = try sealed.withUnsafeBytes { s in try out.withUnsafeMutableBytes { o in try AudioFrame.open(s, keys: candidates, into: o) } }
        return Array(out[..<n])
    }
    static func sealVideo(_ nals: [[UInt8]], key: CallKey) throws -> [[UInt8]] {
        let au = VideoFrameTests.au(nals)
        var out = [UInt8](repeating: 0, count: try #require(au.withUnsafeBytes { VideoFrame.sealedCapacity($0) }))
        let n = try au.withUnsafeBytes { a in try out.withUnsafeMutableBytes { o in try VideoFrame.seal(a, key: key, into: o) } }
        return VideoFrameTests.nals(Array(out[..<n]))
    }
    static func openVideo(_ nals: [[UInt8]]) throws -> [[UInt8]] {
        let au = VideoFrameTests.au(nals)
        var out = [UInt8](repeating: 0, count: au.count)
        let candidates = KeyRing(current: key).candidates
        let n = try au.withUnsafeBytes { a in try out.withUnsafeMutableBytes { o in try VideoFrame.open(a, keys: candidates, into: o) } }
        return VideoFrameTests.nals(Array(out[..<n]))
    }

    static func make() throws -> Vectors {
        var audio = try audioPlain.map { Vectors.Audio(plain: $0.hex, sealed: try sealAudio($0, key: key).hex, mustFail: false) }
        var tampered = try sealAudio(audioPlain[2], key: key)
        tampered[tampered.count - 1] ^= 0x01
        var unmarked = try sealAudio(audioPlain[2], key: key)
        unmarked[0] = 0xFE
        audio += [tampered, unmarked, try sealAudio(audioPlain[2], key: otherKey)].map { Vectors.Audio(plain: nil, sealed: $0.hex, mustFail: true) }

        var video = try videoPlain.map { Vectors.Video(plain: $0.map(\.hex), sealed: try sealVideo($0, key: key).map(\.hex), mustFail: false) }
        var flipped = try sealVideo(videoPlain[0], key: key)
        flipped[2][20] ^= 0x01  // a ciphertext byte of the IDR slice
        video += [flipped, try sealVideo(videoPlain[1], key: otherKey)].map { Vectors.Video(plain: nil, sealed: $0.map(\.hex), mustFail: true) }
        return Vectors(key: "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", audio: audio, video: video)
    }

    @Test(.enabled(if: ProcessInfo.processInfo.environment["SFUBOT_WRITE_VECTORS"] != nil))
    func writeVectors() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(try Self.make()).write(to: Self.file)
    }

    /// The committed vectors still open in Swift to their plaintext, and the negative ones fail:
    /// the page checks the same file (Tests/Chromium/run-vectors).
    @Test func swiftOpensTheSharedVectors() throws {
        let v = try JSONDecoder().decode(Vectors.self, from: Data(contentsOf: Self.file))
        #expect(v.audio.count >= 7 && v.video.count >= 6)
        for a in v.audio {
            let opened = try? Self.openAudio([UInt8](hex: a.sealed))
            if a.mustFail { #expect(opened == nil) } else { #expect(opened == [UInt8](hex: try #require(a.plain))) }
        }
        for f in v.video {
            let opened = try? Self.openVideo(f.sealed.map { [UInt8](hex: $0) })
            if f.mustFail { #expect(opened == nil) } else { #expect(opened == (try #require(f.plain)).map { [UInt8](hex: $0) }) }
        }
    }
}
