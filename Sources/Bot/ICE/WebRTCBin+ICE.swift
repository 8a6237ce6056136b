public import GStreamerKit

extension WebRTCBin {
    /// Points this webrtcbin's ICE at the configured servers: `stun-server`, one
    /// `add-turn-server` per TURN URL (credentials made now, so a shared secret's are fresh for
    /// each new PeerConnection), `ice-transport-policy`. Before the first description.
    public func useICE(_ ice: ICEServers, extraTURN: [String] = []) throws(GStreamerError) {
        if let stun = ice.stunURI { try element.set("stun-server", stun) }
        for uri in ice.turnURIs() + extraTURN { try addTurnServer(uri) }
        if ice.policy == .relay { try useRelayOnly() }
    }
}

extension BotConfig {
    /// Applies this participant's ICE servers (the options' and the agent's `/credentials`).
    func configureICE(_ webrtc: WebRTCBin) throws(GStreamerError) {
        try webrtc.useICE(ice, extraTURN: turnServers)
    }
}
