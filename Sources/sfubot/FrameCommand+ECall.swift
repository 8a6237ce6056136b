import ArgumentParser
import FrameCrypto

/// `sfubot frame` for ECall's layout (ECALL-WIRE §2–3): no key index, one call key.
enum ECallFrameTool {
    static func run(_ action: FrameTool.Action, kind: MediaKind, material: KeyMaterial, input: [UInt8]) throws {
        let key: CallKey
        do { key = try material.callKey } catch { throw CLIFailure("--key-hex: an ECall call key is 64 hex characters (32 bytes)", code: .badKey) }
        let keys = KeyRing(current: key).candidates
        switch (action, kind) {
        case (.open, .audio):
            var out = [UInt8](repeating: 0, count: max(1, input.count))
            print(FrameTool.describe(audioLayout(input.count), of: input))
            let r = input.withUnsafeBytes { p in out.withUnsafeMutableBytes { o in Result { () throws(DropReason) in try AudioFrame.open(p, keys: keys, into: o) } } }
            switch r {
            case .success(let n): print("opened: \(n) bytes\nplaintext  \(FrameTool.hex(Array(out[..<n])))")
            case .failure(let e): throw CLIFailure("the key given does not open this frame (\(e.rawValue))", code: .badKey)
            }
        case (.seal, .audio):
            var out = [UInt8](repeating: 0, count: input.count + AudioFrame.overhead)
            let n = try input.withUnsafeBytes { p in try out.withUnsafeMutableBytes { o in try AudioFrame.seal(p, key: key, into: o) } }
            print(FrameTool.describe(audioLayout(n), of: out))
            print("sealed     \(FrameTool.hex(Array(out[..<n])))")
        case (.open, .video):
            var out = [UInt8](repeating: 0, count: max(1, input.count))
            let r = input.withUnsafeBytes { p in out.withUnsafeMutableBytes { o in Result { () throws(DropReason) in try VideoFrame.open(p, keys: keys, into: o) } } }
            switch r {
            case .success(let n):
                print("opened: every slice (NAL types 1, 5) past its 2 clear bytes was nonce(12) ‖ ciphertext ‖ tag(16)")
                print("plaintext  \(FrameTool.hex(AnnexB.fromLengthPrefixed(Array(out[..<n]))))")
            case .failure(let e): throw CLIFailure("the key given does not open this frame (\(e.rawValue))", code: .badKey)
            }
        case (.seal, .video):
            guard let capacity = input.withUnsafeBytes({ VideoFrame.sealedCapacity($0) }) else {
                throw CLIFailure("this video frame is not a whole H.264 access unit", code: .badKey)
            }
            var out = [UInt8](repeating: 0, count: capacity)
            let n = try input.withUnsafeBytes { p in try out.withUnsafeMutableBytes { o in try VideoFrame.seal(p, key: key, into: o) } }
            print("sealed     \(FrameTool.hex(AnnexB.fromLengthPrefixed(Array(out[..<n]))))")
        }
    }

    static func audioLayout(_ count: Int) -> [FrameField] {
        guard count >= AudioFrame.overhead else { return [FrameField("too short", 0..<count)] }
        return [FrameField("marker 0xFF", 0..<1), FrameField("nonce", 1..<13), FrameField("ciphertext", 13..<(count - 16)),
                FrameField("GCM tag", (count - 16)..<count)]
    }
}
