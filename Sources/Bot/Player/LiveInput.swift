import Logging

/// What a `.live` player publishes from, read before it joins and outliving every rejoin: a live
/// source (`LiveSource`: RTMP, SRT, RTP) or another room's participant (`RoomInput`). Each
/// publishing pipeline is attached to its `sink` in turn (Player+Live.swift).
protocol LiveInput: AnyObject, Sendable {
    var sink: LiveSink { get }
    /// Whether it has video, known once `start` returned.
    var hasVideo: Bool { get }
    /// Audio comes as Opus packets, sealed as they are (`play-live-opus`), not raw audio to encode.
    var audioIsOpus: Bool { get }
    /// For the log: never a secret.
    var shown: String { get }
    /// Starts reading and returns once its tracks are known; refuses one without audio.
    func start(_ setup: LiveSource.Setup) async throws(BotError)
    func stop() async
    /// Janus asked the publisher for a keyframe.
    func requestKeyFrame()
    /// Whether it is away or came back less than `window` ago: Janus not receiving the
    /// publisher's media then is the input's gap, not a lost path.
    func explainsSilence(window: Duration) -> Bool
}

extension LiveSource: LiveInput {
    var audioIsOpus: Bool { false }
    var shown: String { address.description }
}
