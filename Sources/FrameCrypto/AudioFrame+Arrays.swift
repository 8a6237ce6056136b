/// Array forms of the audio frame functions, for control paths and tests (the media path
/// uses the buffer forms, which allocate nothing of their own).
extension AudioFrame {
    /// `nonce`: 12 bytes for known-answer tests; nil draws a fresh random one.
    public static func sealed(_ plaintext: [UInt8], key: CallKey, nonce: [UInt8]? = nil) throws(FrameError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: plaintext.count + overhead)
        let result: Result<Int, FrameError> = plaintext.withUnsafeBytes { p in
            out.withUnsafeMutableBytes { o in
                guard let nonce else { return Result { () throws(FrameError) in try seal(p, key: key, into: o) } }
                return nonce.withUnsafeBytes { n in Result { () throws(FrameError) in try seal(p, key: key, into: o, nonce: n) } }
            }
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
