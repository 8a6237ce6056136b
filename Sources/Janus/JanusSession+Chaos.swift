import Logging

/// Fault injection for `sfubot load --chaos`: the session's WebSocket goes away as if the
/// network had cut it, so the normal path runs (reconnect with backoff and `claim`, or the
/// session ends and the participant rejoins). Nothing here changes how a session behaves.
extension JanusSession {
    /// Closes the current transport under an open session. Its reader ends and
    /// `connectionLost` takes over exactly as for a dropped connection (Janus sees its
    /// transport go away either way). Does nothing unless the session is open.
    package func dropConnection() {
        guard case .open = state else { return }
        logger.debug("chaos: dropping the WebSocket to Janus")
        transport.close()
    }

    /// Connections that dropped and claims that got the session back, read together.
    package var reconnectionCounters: (drops: Int, claims: Int) { (connectionDrops, reclaims) }
}
