/// A plugin handle on a session.
public struct JanusHandle: Sendable {
    public let id: Int64
    public let session: JanusSession
    /// Events Janus pushes for this handle; ends when the handle is detached or the session closes.
    public let events: AsyncStream<HandleEvent>

    public func message(_ body: JSON, jsep: JSEP? = nil) async throws(JanusError) -> PluginReply {
        try await session.message(handle: id, body: body, jsep: jsep)
    }

    /// Trickles one local candidate.
    public func trickle(mline: Int, candidate: String) async throws(JanusError) {
        try await session.trickle(handle: id, candidate: ["candidate": .string(candidate), "sdpMLineIndex": .int(Int64(mline))])
    }

    /// Tells Janus no more local candidates will come.
    public func trickleCompleted() async throws(JanusError) {
        try await session.trickle(handle: id, candidate: ["completed": true])
    }

    public func detach() async { await session.detach(handle: id) }
}
