public import Foundation
public import Bot
import FrameCrypto

/// A job as the API shows it (GET, POST and DELETE answers). Never the key.
public struct JobStatus: Codable, Sendable {
    public var id: String
    public var kind: String
    public var state: String
    public var room: Int64
    public var janus: String?
    public var e2ee: Bool
    /// The frame format (`ecall`, `framecryptor`, `sframe`); absent without encryption. Never a key.
    public var frameFormat: String?
    public var out: String?
    public var mix: String?
    public var file: String?
    public var display: String?
    public var loop: Bool?
    public var durationSeconds: Double?
    public var created: Date
    public var ended: Date?
    /// Recording: every track so far with its frame counters.
    public var feeds: [Feed]?
    /// Recording: the files written so far (paths); playback: none.
    public var files: [String]?
    /// Playback: frames sealed (or sent as is) and frames that could not be sealed.
    public var frames: Sent?
    /// Times the job lost Janus or its media path and came back.
    public var reconnects: Int
    /// Times the service took the job up again after a restart (a recording continues in new
    /// segments, with the time away as a gap in its manifest).
    public var resumes: Int
    public var lastError: String?
    public var lastErrorTime: Date?
    /// Recording: the ICE candidate pair carrying the media (`relay/udp→host`); no address.
    public var candidatePair: String?
    /// Whether it is paused now, and its pauses (wall clock).
    public var paused: Bool?
    public var pauses: [RecordingManifest.Pause]?
    /// With `--database`: the instance running the job now (absent while it waits for one).
    public var owner: String?
    /// With `--database`: every instance that ran the job, in order, and why each began and ended.
    public var owners: [Owner]?
    /// Relay: the destination without what may be secret (an RTMP stream name, a passphrase).
    public var to: String?
    /// Relay: the participant relayed.
    public var participant: String?
    /// Relay in: the live source, without what may be secret (its stream name, a passphrase).
    public var from: String?
    /// Relay into another room: that room (its key is never shown).
    public var toRoom: Int64?
    /// Relay of the whole room, composed: `grid` or `speaker`.
    public var layout: String?
    /// Relay: `waiting` (for the participant), `sending`, `retrying` (its destination failed), `done`.
    public var relayPhase: String?
    /// With `--storage`: the recording's files on their way to the store, as the instance that
    /// finished it sees them (GET of one job).
    public var uploads: Uploads?

    public struct Uploads: Codable, Sendable {
        /// Files queued and not yet verified in the store: their local copies are kept.
        public var pending: Int
        /// Files uploaded and verified (their local copies deleted).
        public var uploaded: Int
        /// Files that vanished before they could be uploaded, or whose folder was abandoned.
        public var missing: Int
        /// Failed tries so far (each is retried with backoff).
        public var failedTries: Int
        /// Why the last try failed, while files are pending.
        public var lastError: String?
        /// With `--database`: owners whose own folder (on a disk of their own) is not queued
        /// yet; they queue it once they run again. The merged manifest and `job.finished` wait.
        public var waitingFor: [String]? = nil
        /// With `--database`: folders an operator gave up (`uploads/abandon`).
        public var abandoned: [AbandonedFolder]? = nil
        /// With `--database`: every folder uploaded, the merged manifest too, `job.finished` sent.
        public var finished: Bool? = nil
    }

    public struct Owner: Codable, Sendable {
        public var instance: String
        /// `new`, `failover` (the one before lost its lease) or `released` (it shut down).
        public var cause: String
        public var since: Date
        public var until: Date?
        /// `finished`, `lease expired`, `released`, `fenced`.
        public var endCause: String?
    }

    public struct Feed: Codable, Sendable {
        public var feedId: Int64
        public var display: String
        public var kind: String
        public var codec: String
        public var file: String
        public var live: Bool
        public var framesReceived: Int
        public var framesOpened: Int
        public var framesDropped: Int
        /// Drops by reason (`no_marker`, `too_short`, `no_key_opens`, `malformed`, `missing_key`, `unencrypted`, `replayed`).
        public var dropped: [String: Int]
        public var error: String?
    }

    public struct Sent: Codable, Sendable {
        public var audioSealed: Int
        public var videoSealed: Int
        public var sealFailed: Int
    }

    init(_ job: Job, uploads: Uploads?) {
        self.init(job)
        self.uploads = uploads
    }

    init(_ job: Job) {
        let spec = job.spec, live = job.live.snapshot, outcome = job.outcome
        id = job.id
        kind = spec.kind.rawValue
        state = job.state.rawValue
        room = spec.room
        janus = spec.janus
        e2ee = spec.key != .none || spec.frameFormat.namesItsKey
        frameFormat = e2ee ? spec.frameFormat.rawValue : nil
        out = spec.out
        mix = spec.mix
        file = spec.file
        display = spec.display
        loop = spec.kind == .playback ? spec.loop : nil
        durationSeconds = spec.durationSeconds
        created = job.created
        ended = outcome?.ended
        reconnects = live.comebacks
        resumes = job.resumes
        paused = job.pause.map { $0.isPaused && job.isActive }
        pauses = job.pause.map(\.all)
        lastError = (outcome?.error ?? live.lastError).map(Self.withoutConnectReason)
        lastErrorTime = outcome?.error != nil ? outcome?.ended : live.lastErrorTime
        if let relay = job.relay?.snapshot {
            to = spec.to.flatMap { try? RelayTarget($0) }?.description
            participant = spec.participant
            relayPhase = relay.phase.rawValue
            reconnects = relay.comebacks
            if outcome?.error == nil, let error = relay.lastError { (lastError, lastErrorTime) = (error, relay.lastErrorTime) }
        }
        if spec.kind == .recording {
            let dir = URL(fileURLWithPath: spec.out ?? "/")
            feeds = live.feeds.map {
                Feed(feedId: $0.feedID, display: $0.display, kind: $0.kind, codec: $0.codec, file: $0.file, live: $0.left == nil,
                     framesReceived: $0.frames.received, framesOpened: $0.frames.opened, framesDropped: $0.frames.droppedTotal,
                     dropped: $0.frames.dropped, error: $0.error)
            }
            files = live.feeds.map { dir.appendingPathComponent($0.file).path } + (spec.mix.map { [$0] } ?? [])
            candidatePair = live.candidatePair
        }
        from = spec.from.flatMap { try? LiveSourceAddress($0) }?.description
        toRoom = spec.toRoom?.room
        if spec.participant == nil, case .destination? = spec.to.flatMap({ try? RelayTarget($0) }) { layout = spec.layout ?? "grid" }
        if let sent = job.sent {
            let a = sent.audio.snapshot, v = sent.video.snapshot
            frames = Sent(audioSealed: a.sealed, videoSealed: v.sealed, sealFailed: a.sealFailed + v.sealFailed)
        }
    }

    /// An error with why a connection to Janus failed left out: refused, timed out, not a
    /// WebSocket or a failed upgrade would tell a client what listens at a URL (a port scan).
    /// The service's log keeps the reason.
    static func withoutConnectReason(_ text: String) -> String {
        if let start = text.range(of: "Janus unreachable at ") {
            let rest = text[start.upperBound...]
            let url = rest.prefix { $0 != " " }
            let tail = rest.range(of: "is the URL ws://HOST:PORT?").map { String(rest[$0.upperBound...]) } ?? ""
            return String(text[..<start.lowerBound]) + "Janus at \(url) could not be reached" + tail
        }
        if let cut = text.range(of: " unreachable: ") { return String(text[..<cut.lowerBound]) + " could not be reached" }
        return text
    }
}
