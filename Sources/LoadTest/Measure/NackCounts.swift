/// What a direct-path publisher did with Janus's NACKs: Janus asks for a video packet again when
/// it sees a gap in the sequence numbers, and the sender answers with the same SRTP packet from
/// its history of the last 64 KiB sent (`DirectRTPSender.nacks`; no RTX is negotiated).
public struct NackCounts: Codable, Sendable, Equatable {
    /// NACK messages about this bot's SSRCs.
    public var nacks: UInt64 = 0
    /// Packets they asked for.
    public var requested: UInt64 = 0
    /// Packets sent again.
    public var retransmitted: UInt64 = 0
    /// Packets asked for (while answering) that the history no longer held.
    public var unavailable: UInt64 = 0

    public init(nacks: UInt64 = 0, requested: UInt64 = 0, retransmitted: UInt64 = 0, unavailable: UInt64 = 0) {
        self.nacks = nacks
        self.requested = requested
        self.retransmitted = retransmitted
        self.unavailable = unavailable
    }

    /// Summed over bots; nil if no bot sent video directly.
    static func total(_ list: [NackCounts]) -> NackCounts? {
        guard !list.isEmpty else { return nil }
        return list.reduce(into: NackCounts()) { t, n in
            t.nacks += n.nacks
            t.requested += n.requested
            t.retransmitted += n.retransmitted
            t.unavailable += n.unavailable
        }
    }
}
