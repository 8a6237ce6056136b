public import Crypto

/// Array forms of the audio frame functions, for control paths and tests (the media path
/// uses the buffer forms, which allocate nothing of their own).
extension AudioFrame {
    public static func sealed(_ plaintext: [UInt8], key: CallKey, nonce: AES.GCM.Nonce = AES.GCM.Nonce()) throws(FrameError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: plaintext.count + overhead)
        let result: Result<Int, FrameError> = plaintext.withUnsafeBytes { p in
            out.withUnsafeMutableBytes { o in Result { () throws(FrameError) in try seal(p, key: key, nonce: nonce, into: o) } }
        }
        return Array(out[..<(try result.get())])
    }

    public static func opened(_ frame: [UInt8], keys: KeyRing.Candidates) throws(DropReason) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: max(0, frame.count - overhead))
        let result: Result<Int, DropReason> = frame.withUnsafeBytes { f in
            out.withUnsafeMutableBytes { o in Result { () throws(DropReason) in try open(f, keys: keys, into: o) } }
        }
        return Array(out[..<(try result.get())])
    }
}
