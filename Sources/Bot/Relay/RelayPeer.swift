import GStreamerKit
import Janus
import Locking
import Logging

/// One PeerConnection of a relay and its subscription: a pipeline of its own (pipelines/
/// `subscribe` or `speaker-subscribe`) whose incoming pads go to a `RelayInput`. A participant
/// that leaves and comes back gets a new one (webrtcbin 1.22 cannot take Janus's reuse of the
/// freed m-lines).
struct RelayPeer: Sendable {
    let pipeline: Pipeline
    let subscription: Subscription
    let number: Int

    /// Builds and starts the pipeline off Swift's pool (a state change joins threads), and
    /// follows the PeerConnection: `lost` is called once if its media path goes.
    static func make(_ number: Int, pipeline name: String = "subscribe", config: BotConfig, session: JanusSession, roster: RoomRoster,
                     input: RelayInput, logger log: Logger, lost: @escaping @Sendable (Int, PeerLoss) async -> Void) async throws -> RelayPeer {
        let description = try config.pipelines.description(name)
        let pipeline = try await OffPool.run { () throws(GStreamerError) -> Pipeline in
            let pipeline = try Pipeline(description: description)
            try pipeline.setState(.playing)
            return pipeline
        }
        let webrtc = try WebRTCBin(pipeline.element(named: "webrtc"))
        try config.configureICE(webrtc)
        webrtc.onIncomingPad { incoming in
            guard let mid = incoming.mid else { return }
            input.attach(pad: incoming.pad, mid: mid, pipeline: pipeline)
        }
        let subscription = Subscription(session: session, room: config.room, privateID: roster.privateID, webrtc: webrtc, logger: log,
                                        hooks: .init(streams: { input.learn($0) }))
        input.keyFrames.route(to: subscription)
        Task {
            for await event in subscription.events {
                if case .lost(let loss) = event {
                    await lost(number, loss)
                    return
                }
            }
        }
        return RelayPeer(pipeline: pipeline, subscription: subscription, number: number)
    }

    /// Leaves the subscription (not announced when the session is already lost: each request
    /// would wait its timeout) and stops the pipeline.
    func close(announce: Bool = true) async {
        await subscription.leave(announce: announce)
        await pipeline.stop()
    }
}
