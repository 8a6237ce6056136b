internal import CGStreamer
internal import CGStreamerShims

/// The ICE candidate pair a transport selected, from webrtcbin's `get-stats` (GStreamer ≥ 1.21
/// reports only the selected pair, as `ice-candidate-pair_<transport>`, with its two candidates).
public struct CandidatePair: Sendable, Equatable, Codable {
    /// `host`, `srflx`, `prflx` or `relay`, as libnice names them.
    public var local: String
    public var remote: String
    /// The transport to the peer (`udp`, `tcp`).
    public var proto: String?
    /// For a relay candidate: how it reaches the TURN server (`udp`, `tcp`, `tls`).
    public var relayProtocol: String?

    enum CodingKeys: String, CodingKey { case local, remote, proto = "protocol", relayProtocol = "relay_protocol" }

    public init(local: String, remote: String, proto: String? = nil, relayProtocol: String? = nil) {
        self.local = local
        self.remote = remote
        self.proto = proto
        self.relayProtocol = relayProtocol
    }

    /// `relay/udp→host` style, for logs and status lines (no address: those stay in debug logs).
    public var summary: String {
        "\(local)\(relayProtocol.map { "/\($0)" } ?? "")→\(remote)"
    }
}

extension WebRTCBin {
    /// The selected candidate pair of each ICE transport (one with BUNDLE); empty before ICE
    /// has selected one.
    public func selectedCandidatePairs() async throws(GStreamerError) -> [CandidatePair] {
        switch await awaitPromise({ sfb_webrtc_get_stats(element.pointer, nil, $0) }) {
        case .replied(let s): return s.pointer.map(CandidatePair.parse) ?? []
        case .interrupted, .expired: throw .promise("get-stats was interrupted")
        }
    }
}

extension CandidatePair {
    static func parse(_ report: UnsafeMutablePointer<GstStructure>) -> [CandidatePair] {
        let structureType = gst_structure_get_type()
        var candidates: [String: (type: String, proto: String?, relay: String?)] = [:]
        var pairs: [(String, String)] = []
        for i in 0..<gst_structure_n_fields(report) {
            guard let name = gst_structure_nth_field_name(report, guint(i)),
                  let value = gst_structure_get_value(report, name), value.pointee.g_type == structureType,
                  let entry = gst_value_get_structure(value) else { continue }
            var type: gint = 0
            guard gst_structure_get_enum(entry, "type", gst_webrtc_stats_type_get_type(), &type) != 0 else { continue }
            func string(_ field: String) -> String? { gst_structure_get_string(entry, field).map { String(cString: $0) } }
            switch GstWebRTCStatsType(rawValue: UInt32(type)) {
            case GST_WEBRTC_STATS_LOCAL_CANDIDATE, GST_WEBRTC_STATS_REMOTE_CANDIDATE:
                if let id = string("id"), let t = string("candidate-type") {
                    candidates[id] = (t, string("protocol"), string("relay-protocol"))
                }
            case GST_WEBRTC_STATS_CANDIDATE_PAIR:
                if let l = string("local-candidate-id"), let r = string("remote-candidate-id") { pairs.append((l, r)) }
            default: continue
            }
        }
        return pairs.compactMap { l, r in
            guard let local = candidates[l], let remote = candidates[r] else { return nil }
            // libnice's relay-protocol is "none" for a candidate that is no relay.
            let relay = local.type == "relay" ? local.relay.flatMap { $0 == "none" ? nil : $0 } : nil
            return CandidatePair(local: local.type, remote: remote.type, proto: local.proto, relayProtocol: relay)
        }
    }
}
