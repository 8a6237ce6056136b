import Foundation

/// Which path each bot's media took (its selected ICE candidate pair) and what a TURN relay
/// added to the round trip: `summary.json`'s `ice`.
public struct ICEPaths: Codable, Sendable, Equatable {
    /// Bots whose selected pair was read; of them, relayed (a TURN relay candidate on our side)
    /// and direct (host, srflx or prflx).
    public var bots: Int
    public var relayed: Int
    public var direct: Int
    /// relayed / bots.
    public var relayedShare: Double?
    /// Bots per pair (`relay/udp→host`, `host→host`).
    public var pairs: [String: Int]
    /// Publishers' round-trip time to Janus from RTCP, ms, over relayed and direct bots. Only
    /// publishers whose RTP went through webrtcbin (`--send-path webrtcbin`, or a fallback)
    /// have one: the direct send path sends no sender report, and subscribers send no RTP.
    public var rttRelayedMs: LoadSummary.Distribution?
    public var rttDirectMs: LoadSummary.Distribution?
    /// What the relay added to the RTT: relayed minus direct, at the median and at p95 (only
    /// when the run had both kinds; `make bench-load` compares two runs instead).
    public var addedRTTMs: AddedRTT?
    /// Publishers on the direct send path: packets sent, and of them those handed to libnice
    /// (a relayed pair: libnice frames each for the TURN server) instead of written with sendto.
    public var directPacketsSent: UInt64
    public var directPacketsThroughAgent: UInt64

    public struct AddedRTT: Codable, Sendable, Equatable {
        public var p50: Double
        public var p95: Double
    }

    /// nil when no bot's pair was read (a run from before pairs were kept, or none joined).
    public init?(_ bots: [BotRecord]) {
        let known = bots.filter { $0.candidatePair != nil }
        guard !known.isEmpty else { return nil }
        self.bots = known.count
        relayed = known.filter { $0.relayed == true }.count
        direct = known.count - relayed
        relayedShare = Double(relayed) / Double(known.count)
        pairs = known.reduce(into: [:]) { $0[$1.candidatePair!, default: 0] += 1 }
        let relayedRTT = LoadSummary.Distribution(known.filter { $0.relayed == true }.compactMap(\.rttMs))
        let directRTT = LoadSummary.Distribution(known.filter { $0.relayed == false }.compactMap(\.rttMs))
        rttRelayedMs = relayedRTT
        rttDirectMs = directRTT
        addedRTTMs = relayedRTT.flatMap { r in directRTT.map { AddedRTT(p50: r.p50 - $0.p50, p95: r.p95 - $0.p95) } }
        let senders = bots.filter { $0.packetsThroughAgent != nil }
        directPacketsSent = senders.reduce(0) { $0 + $1.packetsSent }
        directPacketsThroughAgent = senders.reduce(0) { $0 + ($1.packetsThroughAgent ?? 0) }
    }

    /// The report's line: the share relayed, the pairs, the RTT by path, the direct path's route.
    public var line: String {
        func rtt(_ d: LoadSummary.Distribution?) -> String {
            d.map { String(format: "p50 %.1f p95 %.1f ms (%d)", $0.p50, $0.p95, $0.n) } ?? "–"
        }
        let share = String(format: "%.0f %%", 100 * (relayedShare ?? 0))
        let kinds = pairs.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        var text = "ICE: \(relayed) of \(bots) bots relayed (\(share); \(kinds))"
        if rttRelayedMs == nil && rttDirectMs == nil {
            text += "; RTT: none from RTCP (the direct send path sends no sender reports; --send-path webrtcbin measures it)"
        } else {
            text += "; RTT (RTCP) relayed \(rtt(rttRelayedMs)), direct \(rtt(rttDirectMs))"
            if let a = addedRTTMs { text += String(format: "; the relay added p50 %+.1f ms, p95 %+.1f ms", a.p50, a.p95) }
        }
        if directPacketsSent > 0 {
            text += "; direct send path: \(directPacketsThroughAgent) of \(directPacketsSent) packets through libnice (TURN-framed when relayed)"
        }
        return text
    }
}
