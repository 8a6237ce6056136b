public import GStreamerKit
import Logging

extension WebRTCBin {
    /// Points this webrtcbin's ICE at the configured servers: `stun-server`, one
    /// `add-turn-server` per TURN URL (credentials made now, so a shared secret's are fresh for
    /// each new PeerConnection; a `turns:` server through its bridge in `bridges`, left out
    /// without one), then `issued`'s TURN servers with their own credential, `ice`'s
    /// `ice-transport-policy`. Before the first description.
    public func useICE(_ ice: ICEServers, bridges: TURNTLSBridges? = nil, issued: ICEServers = ICEServers()) throws(GStreamerError) {
        if let stun = ice.stunURI { try element.set("stun-server", stun) }
        for uri in ice.turnURIs(bridged: { bridges?.port(for: $0) }) + issued.turnURIs(bridged: { bridges?.port(for: $0) }) {
            try addTurnServer(uri)
        }
        if ice.policy == .relay { try useRelayOnly() }
    }
}

extension BotConfig {
    /// Applies this participant's ICE servers (the options' and the agent's `/credentials`).
    func configureICE(_ webrtc: WebRTCBin) throws(GStreamerError) {
        try webrtc.useICE(ice, bridges: tlsBridges, issued: issuedTURN)
    }

    /// Runs `body` with this config's `turns:` bridges open (`ice`'s and `issuedTURN`'s) (`tlsBridges` set), and closes them
    /// when it returns or throws: the participant is their one owner.
    func withTLSBridges<T>(_ body: (BotConfig) async throws(BotError) -> T) async throws(BotError) -> T {
        var config = self
        var log = logger
        log[metadataKey: "component"] = "turn-tls"
        config.tlsBridges = try await TURNTLSBridges.open(for: [ice, issuedTURN], logger: log)
        defer { config.tlsBridges?.close() }
        return try await body(config)
    }

    /// Relay only: `refused` gets the first failure of a `turns:` bridge from now on, which is
    /// the new PeerConnection's TURN failure (libnice would not end its gathering for a long
    /// while). Cancel the task with that PeerConnection.
    func watchTLSRefusals(_ refused: @escaping @Sendable (String) async -> Void) -> Task<Void, Never> {
        let refusals = (ice.policy == .relay ? tlsBridges?.failures() : nil) ?? AsyncStream { $0.finish() }
        return Task {
            for await failure in refusals { return await refused(failure) }
        }
    }
}
