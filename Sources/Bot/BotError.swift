public import Janus
public import GStreamerKit

/// What stopped a bot, in one line that says what to do.
public struct BotError: Error, CustomStringConvertible, Sendable {
    private enum Kind: Sendable {
        case janus(JanusError)
        case media(GStreamerError)
        case pipelinesNotFound(String)
        case inputNotFound(String)
        case notMedia(String)
        case unplayable(String, String)
        case stalled(String)
        case roomNotFound(Int64)
        case negotiation(String)
        case pipelineFailed(String)
        case output(String)
        case incomplete(String)
        case relayIncomplete(String)
        case stopped
    }
    private let kind: Kind

    public static func janus(_ e: JanusError) -> Self { .init(kind: .janus(e)) }
    public static func media(_ e: GStreamerError) -> Self { .init(kind: .media(e)) }
    public static func pipelinesNotFound(_ path: String) -> Self { .init(kind: .pipelinesNotFound(path)) }
    public static func inputNotFound(_ path: String) -> Self { .init(kind: .inputNotFound(path)) }
    /// The input exists but is no media GStreamer can decode (a folder, an empty or random file).
    public static func notMedia(_ path: String) -> Self { .init(kind: .notMedia(path)) }
    /// The input is media but cannot be played (no data, an impossible rate): the file and why.
    public static func unplayable(_ path: String, _ reason: String) -> Self { .init(kind: .unplayable(path, reason)) }
    /// A player that stopped sending while its input had not ended, and why.
    public static func stalled(_ m: String) -> Self { .init(kind: .stalled(m)) }
    public static func roomNotFound(_ room: Int64) -> Self { .init(kind: .roomNotFound(room)) }
    public static func negotiation(_ m: String) -> Self { .init(kind: .negotiation(m)) }
    public static func pipelineFailed(_ m: String) -> Self { .init(kind: .pipelineFailed(m)) }
    public static func output(_ m: String) -> Self { .init(kind: .output(m)) }
    /// A recording that finished but lost something (its manifest's `errors` say what).
    public static func incomplete(_ m: String) -> Self { .init(kind: .incomplete(m)) }
    /// A relay that did not deliver what it opened (or had nothing to relay).
    public static func relayIncomplete(_ m: String) -> Self { .init(kind: .relayIncomplete(m)) }

    /// Whether a recording ended having lost something: never a clean end, whoever stopped it.
    public var isLoss: Bool {
        switch kind {
        case .incomplete, .relayIncomplete: true
        default: false
        }
    }
    /// The job was stopped (cancelled) while it was still joining or rejoining.
    public static let stopped = Self(kind: .stopped)

    /// Any error from a bot's steps, as a BotError.
    public init(_ error: any Error) {
        switch error {
        case let e as BotError: self = e
        case let e as JanusError: self = .janus(e)
        case let e as GStreamerError: self = .media(e)
        case is CancellationError: self = .stopped
        default: self = .negotiation(String(describing: error))
        }
    }

    private init(kind: Kind) { self.kind = kind }

    /// Which kind of failure, for exit codes and callers that react to one kind.
    public enum Category: Sendable, Equatable {
        /// Talking to Janus failed (see `janusError`).
        case janus
        case roomMissing
        case inputMissing
        case output
        case media
    }

    public var category: Category {
        switch kind {
        case .janus, .stopped: .janus
        case .roomNotFound: .roomMissing
        case .inputNotFound, .notMedia, .unplayable, .pipelinesNotFound: .inputMissing
        case .output, .incomplete, .relayIncomplete: .output
        case .media, .pipelineFailed, .negotiation, .stalled: .media
        }
    }

    /// Whether the job was stopped (not a failure).
    public var isStopped: Bool {
        if case .stopped = kind { true } else { false }
    }

    /// The Janus error behind it, if that is what it was.
    public var janusError: JanusError? {
        if case .janus(let e) = kind { return e }
        return nil
    }

    public var description: String {
        switch kind {
        case .janus(let e): e.description
        case .media(let e): e.description
        case .pipelinesNotFound(let p): "pipeline descriptions not found (looked in \(p)); pass --pipelines DIR or set SFUBOT_PIPELINES"
        case .inputNotFound(let p): "cannot read \(p): check the path"
        case .notMedia(let p): "not a media file GStreamer can decode: \(p)"
        case .unplayable(let p, let why): "cannot play \(p): it \(why)"
        case .stalled(let m): "playback stalled: \(m)"
        case .roomNotFound(let r): "room \(r) does not exist on this Janus: create it first (or check --room)"
        case .negotiation(let m): "WebRTC negotiation with Janus failed: \(m)"
        case .pipelineFailed(let m): "media pipeline failed: \(m)"
        case .output(let m): "cannot write the recording: \(m)"
        case .incomplete(let m): "the recording is incomplete: \(m)"
        case .relayIncomplete(let m): "the relay is incomplete: \(m)"
        case .stopped: "stopped before the bot was back in the room"
        }
    }
}
