@testable import FrameCrypto
import Testing

/// Shared frames and helpers of the FrameCryptor suites.
enum FC {
    /// libwebrtc's unit test (frame_crypto_transformer_unittest.cc, `KeyProvider`).
    static let material = try! KeyMaterial(Array(0..<16))
    static let options = FrameCryptorOptions(ratchetSalt: Array(0..<8), magicBytes: Array("PQSRTCMagicBytes".utf8))
    static let key = FrameCryptorKey(material: material, options: options)

    /// Bytes without a zero: plaintext NAL units must not hold a start code of their own.
    static func filler(_ count: Int, seed: Int) -> [UInt8] { (0..<count).map { UInt8(($0 * 7 + seed) % 251 + 1) } }
    static let sps: [UInt8] = [0x67, 0x42, 0xC0, 0x1F, 0x8C, 0x8D, 0x40]
    static let pps: [UInt8] = [0x68, 0xCE, 0x3C, 0x80]
    static let aud: [UInt8] = [0x09, 0xF0]
    static let sei: [UInt8] = [0x06, 0x05, 0x04, 0x11, 0x22, 0x33, 0x44, 0x80]
    static let idr: [UInt8] = [0x65, 0x88, 0x84] + filler(300, seed: 3)
    /// A second slice of the same picture (first_mb_in_slice ≠ 0).
    static let idr2: [UInt8] = [0x65, 0x00, 0x9A] + filler(120, seed: 9)
    static let pSlice: [UInt8] = [0x41, 0x9A] + filler(90, seed: 5)

    static func avc(_ nals: [[UInt8]]) -> [UInt8] {
        nals.flatMap { n in withUnsafeBytes(of: UInt32(n.count).bigEndian, Array.init) + n }
    }

    static func seal(_ frame: [UInt8], kind: MediaKind, key: FrameCryptorKey = key, index: UInt8 = 0,
                     iv: [UInt8]? = nil, sealer: FrameCryptorSealer? = nil) throws -> [UInt8] {
        let sealer = sealer ?? FrameCryptorSealer(kind: kind)
        let capacity = frame.withUnsafeBytes { sealer.sealedCapacity($0) } ?? 0
        var out = [UInt8](repeating: 0, count: capacity)
        let n = try frame.withUnsafeBytes { f in
            try out.withUnsafeMutableBytes { o in try sealer.seal(f, key: key, keyIndex: index, into: o, iv: iv) }
        }
        return Array(out[..<n])
    }

    static func open(_ frame: [UInt8], kind: MediaKind, options: FrameCryptorOptions = options,
                     keys: [UInt8: FrameCryptorKey]) throws -> (bytes: [UInt8], index: UInt64) {
        var out = [UInt8](repeating: 0, count: frame.withUnsafeBytes { FrameCryptorOpener.openedCapacity($0, kind: kind) })
        let opened = try frame.withUnsafeBytes { f in
            try out.withUnsafeMutableBytes { o in
                try FrameCryptorOpener.open(f, kind: kind, options: options, key: { keys[$0] }, into: o)
            }
        }
        return (Array(out[..<opened.count]), opened.keyIndex)
    }

    /// The drop reason `body` throws; nil if it opened the frame.
    static func dropReason(_ body: () throws -> Void) -> DropReason? {
        do {
            try body()
            return nil
        } catch let reason as DropReason {
            return reason
        } catch {
            Issue.record("not a DropReason: \(error)")
            return nil
        }
    }
}
