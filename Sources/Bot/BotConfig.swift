import FrameCrypto
public import Janus
public import Logging

/// Where a bot connects and how it protects media; the CLI maps flags onto this.
public struct BotConfig: Sendable {
    public var janusURL: String
    public var room: Int64
    /// ECall's `"<userId>:<DisplayName>"`.
    public var display: String
    public var protection: FrameProtection
    public var janus: JanusSession.Options
    public var pipelines: PipelineLibrary
    public var logger: Logger
    /// Diagnostics: sees every frame on both sides of the seal/open transform.
    public var frameTap: FrameTap?
    /// Called (on a streaming thread, with the feed id) for each received frame no key in the
    /// ring opens: the ECall agent asks the key host for the call key then.
    public var onKeyMissing: (@Sendable (Int64) -> Void)?
    /// With `onKeyMissing` (something asks for the key): how long and how many frames the
    /// recorder holds per feed, in order, while the new call key is on its way, to open them
    /// with it (`KeyHold`). Without `onKeyMissing` nothing is held: no new key would come.
    public var keyHold = KeyHoldBounds()
    /// TURN servers a backend handed out with credentials of their own (ECall's `/credentials`),
    /// used beside `ice`'s, whose STUN server and transport policy apply; a `turns:` one goes
    /// through a bridge like `ice`'s.
    public var issuedTURN = ICEServers()
    /// Fetches `issuedTURN` again (the ECall agent: `/credentials`), when the TURN server
    /// refused the ones in use (`refreshedTURN`).
    public var fetchIssuedTURN: (@Sendable () async throws -> ICEServers)?
    /// STUN/TURN servers, TURN credentials and the ICE transport policy (`--ice-server` and its
    /// options); applied to every webrtcbin the participant makes.
    public var ice = ICEServers()
    /// The participant's TLS bridges to the `turns:` servers of `ice` and `issuedTURN`, while it runs (set by
    /// `withTLSBridges`, never by a caller).
    public internal(set) var tlsBridges: TURNTLSBridges?
    /// How long a participant that lost Janus (its WebSocket, the session, or its media path)
    /// keeps trying to come back before it gives up: long enough for Janus to restart and a
    /// network to heal, short enough that a room that is gone ends the job.
    public var rejoinTimeout: Duration = .seconds(60)
    /// Without media on a connection that had it, for this long: its path is taken as lost and
    /// the participant reconnects its media (ICE loss). Longer than a short network hiccup,
    /// which the old connection rides out by itself.
    public var mediaLossTimeout: Duration = .seconds(4)
    /// Publishers present and no media from any of them reached the recorder for this long
    /// (TURN, ICE, DTLS or negotiation never worked): the recording ends with an error rather
    /// than record nothing for its whole duration.
    public var joinTimeout: Duration = .seconds(30)
    /// The recorder's media socket receive buffer, in bytes (the kernel doubles it); nil: 4 MiB.
    /// Smaller only to test what a starved recorder reports.
    public var receiveBufferBytes: Int? = nil
    /// How the recorder receives media (`ReceivePath`): no thread per stream (the default), or
    /// webrtcbin's own path (the fallback).
    public var receivePath = ReceivePath.direct
    /// A publisher opens a `keepalive` data channel and sends `ping:<epoch>` on it this often,
    /// as ECall phones do (ECALL-WIRE §6); nil: no channel.
    public var keepaliveInterval: Duration? = .seconds(30)

    public init(janusURL: String, room: Int64, display: String, protection: FrameProtection,
                janus: JanusSession.Options = .init(), pipelines: PipelineLibrary, logger: Logger) {
        self.janusURL = janusURL
        self.room = room
        self.display = display
        self.protection = protection
        self.janus = janus
        self.pipelines = pipelines
        self.logger = logger
    }
}

extension BotConfig {
    /// The session options with reconnection: a dropped WebSocket is reconnected and the
    /// session claimed for as long as the participant would try to rejoin.
    public var sessionOptions: JanusSession.Options {
        var o = janus
        o.reclaimWindow = rejoinTimeout
        return o
    }

    /// A new session to Janus (which claims itself back after a dropped connection).
    func connect(logger: Logger) async throws(BotError) -> JanusSession {
        do { return try await JanusSession.connect(url: janusURL, options: sessionOptions, logger: logger) } catch { throw .janus(error) }
    }

    /// `connect` as a function value.
    var connector: @Sendable (Logger) async throws(BotError) -> JanusSession {
        let config = self
        @Sendable func open(_ log: Logger) async throws(BotError) -> JanusSession { try await config.connect(logger: log) }
        return open
    }
}

/// Where a frame was seen: before/after sealing (send) or before/after opening (receive).
public enum FrameTapPoint: Sendable { case beforeSeal, afterSeal, beforeOpen, afterOpen }

/// A diagnostic observer of frames around the E2EE transform (for tests and captures).
/// Called on GStreamer streaming threads with the feed id (0 for the bot's own stream).
public typealias FrameTap = @Sendable (FrameTapPoint, Int64, UnsafeRawBufferPointer) -> Void
