/// What each byte of a sealed SFrame frame is, for `sfubot frame`: config byte, KID and CTR
/// (when they do not fit in the config byte), ciphertext, tag. Read from the bytes alone: no
/// key is needed, but the suite is (it fixes the tag length).
public struct SFrameLayout: Sendable, Equatable {
    public struct Field: Sendable, Equatable {
        /// "config", "kid", "ctr", "ciphertext" or "tag".
        public let name: String
        public let range: Range<Int>
    }

    public let header: SFrameHeader
    public let suite: SFrameSuite
    /// The fields in frame order; together they cover every byte once.
    public let fields: [Field]

    /// nil if the frame ends inside its header or its tag.
    public init?(frame: UnsafeRawBufferPointer, suite: SFrameSuite) {
        guard let header = SFrameHeader(parsing: frame), frame.count >= header.count + suite.tagCount else { return nil }
        self.header = header
        self.suite = suite
        let kidEnd = 1 + header.kidCount, ctrEnd = kidEnd + header.ctrCount, tagStart = frame.count - suite.tagCount
        fields = [Field(name: "config", range: 0..<1), Field(name: "kid", range: 1..<kidEnd),
                  Field(name: "ctr", range: kidEnd..<ctrEnd), Field(name: "ciphertext", range: ctrEnd..<tagStart),
                  Field(name: "tag", range: tagStart..<frame.count)].filter { !$0.range.isEmpty }
    }

    public init?(frame: [UInt8], suite: SFrameSuite) {
        guard let layout = frame.withUnsafeBytes({ Self(frame: $0, suite: suite) }) else { return nil }
        self = layout
    }

    /// The config byte's fields, e.g. "X=1 KLEN=2 Y=0 CTR=5".
    public var config: String {
        let kid = header.kidCount == 0 ? "X=0 KID=\(header.kid)" : "X=1 KLEN=\(header.kidCount)"
        let ctr = header.ctrCount == 0 ? "Y=0 CTR=\(header.ctr)" : "Y=1 CLEN=\(header.ctrCount)"
        return kid + " " + ctr
    }
}
