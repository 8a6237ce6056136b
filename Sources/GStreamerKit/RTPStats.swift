internal import CGStreamer
internal import CGStreamerShims

/// One RTP stream's counters from webrtcbin's `get-stats`, in the W3C webrtc-stats sense.
public struct RTPStreamStats: Sendable, Equatable {
    public enum Kind: String, Sendable { case inbound, outbound, remoteInbound, remoteOutbound }
    public var kind: Kind
    public var ssrc: UInt32
    /// Packets and bytes received (inbound) or sent (outbound, remote-outbound).
    public var packets: UInt64 = 0
    public var bytes: UInt64 = 0
    /// Cumulative loss (inbound: what we lost; remote-inbound: what the peer reports).
    public var packetsLost: Int64 = 0
    /// Interarrival jitter in seconds.
    public var jitter: Double?
    /// Round-trip time in seconds (remote-inbound, from RTCP RR's LSR/DLSR).
    public var roundTripTime: Double?
}

extension WebRTCBin {
    /// The RTP stream entries of `get-stats`, read field by field from the reply structure.
    public func rtpStats() async throws(GStreamerError) -> [RTPStreamStats] {
        switch await awaitPromise({ sfb_webrtc_get_stats(element.pointer, nil, $0) }) {
        case .replied(let s): return s.pointer.map(RTPStreamStats.parse) ?? []
        case .interrupted, .expired: throw .promise("get-stats was interrupted")
        }
    }
}

extension WebRTCBin {
    /// The RTP stream entries and the selected candidate pairs from one `get-stats` (a load
    /// run reads both for hundreds of bots every few seconds).
    public func rtpStatsAndPairs() async throws(GStreamerError) -> (streams: [RTPStreamStats], pairs: [CandidatePair]) {
        switch await awaitPromise({ sfb_webrtc_get_stats(element.pointer, nil, $0) }) {
        case .replied(let s): return s.pointer.map { (RTPStreamStats.parse($0), CandidatePair.parse($0)) } ?? ([], [])
        case .interrupted, .expired: throw .promise("get-stats was interrupted")
        }
    }
}

extension RTPStreamStats {
    static func parse(_ report: UnsafeMutablePointer<GstStructure>) -> [RTPStreamStats] {
        let structureType = gst_structure_get_type()
        var out: [RTPStreamStats] = []
        for i in 0..<gst_structure_n_fields(report) {
            guard let name = gst_structure_nth_field_name(report, guint(i)),
                  let value = gst_structure_get_value(report, name), value.pointee.g_type == structureType,
                  let entry = gst_value_get_structure(value) else { continue }
            var type: gint = 0
            guard gst_structure_get_enum(entry, "type", gst_webrtc_stats_type_get_type(), &type) != 0 else { continue }
            let kind: Kind
            switch GstWebRTCStatsType(rawValue: UInt32(type)) {
            case GST_WEBRTC_STATS_INBOUND_RTP: kind = .inbound
            case GST_WEBRTC_STATS_OUTBOUND_RTP: kind = .outbound
            case GST_WEBRTC_STATS_REMOTE_INBOUND_RTP: kind = .remoteInbound
            case GST_WEBRTC_STATS_REMOTE_OUTBOUND_RTP: kind = .remoteOutbound
            default: continue
            }
            var s = RTPStreamStats(kind: kind, ssrc: UInt32(number(entry, "ssrc") ?? 0))
            let sent = kind == .outbound || kind == .remoteOutbound
            s.packets = UInt64(number(entry, sent ? "packets-sent" : "packets-received") ?? 0)
            s.bytes = UInt64(number(entry, sent ? "bytes-sent" : "bytes-received") ?? 0)
            s.packetsLost = Int64(number(entry, "packets-lost") ?? 0)
            s.jitter = number(entry, "jitter")
            s.roundTripTime = number(entry, "round-trip-time")
            out.append(s)
        }
        return out
    }

    /// Any numeric field as a Double (webrtcbin mixes uint, int64, uint64 and double).
    private static func number(_ s: UnsafePointer<GstStructure>, _ field: String) -> Double? {
        guard let v = gst_structure_get_value(s, field) else { return nil }
        var d = GValue()
        g_value_init(&d, doubleType)
        defer { g_value_unset(&d) }
        guard g_value_transform(v, &d) != 0 else { return nil }
        return g_value_get_double(&d)
    }

    private static let doubleType = g_type_from_name("gdouble")
}
