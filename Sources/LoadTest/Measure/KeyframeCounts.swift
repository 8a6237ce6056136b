/// What a direct-path video publisher did with Janus's keyframe requests (PLI, FIR): Janus asks
/// when a subscriber starts, and the shared stream's next IDR answers (`DirectRTPSender.keyframes`).
public struct KeyframeCounts: Codable, Sendable, Equatable {
    public var requests: UInt64 = 0
    /// Requests an IDR sent afterwards answered (the rest were still waiting at the end).
    public var answered: UInt64 = 0
    /// IDRs sent.
    public var sent: UInt64 = 0
    /// The longest a request waited for its IDR: at most a keyframe interval if all is well.
    public var slowestAnswerMs: Double = 0

    public init(requests: UInt64 = 0, answered: UInt64 = 0, sent: UInt64 = 0, slowestAnswerMs: Double = 0) {
        self.requests = requests
        self.answered = answered
        self.sent = sent
        self.slowestAnswerMs = slowestAnswerMs
    }

    /// Summed over bots (the slowest is the slowest of all); nil if no bot sent video directly.
    static func total(_ list: [KeyframeCounts]) -> KeyframeCounts? {
        guard !list.isEmpty else { return nil }
        return list.reduce(into: KeyframeCounts()) { t, k in
            t.requests += k.requests
            t.answered += k.answered
            t.sent += k.sent
            t.slowestAnswerMs = max(t.slowestAnswerMs, k.slowestAnswerMs)
        }
    }
}
