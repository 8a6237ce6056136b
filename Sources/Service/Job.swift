import Bot
import Proof
import Foundation
import FrameCrypto
import Synchronization
import Locking

/// One recording, playback or relay the service runs: its request, the participant doing it (whose
/// `LiveStatus` says what it does now) and, once it ended, how.
final class Job: Sendable {
    enum State: String, Codable, Sendable, CaseIterable {
        case starting, running, reconnecting, stopping, done, failed

        var isFinal: Bool { self == .done || self == .failed }
    }

    /// How a job ended, kept and persisted.
    struct Outcome: Codable, Sendable {
        var state: State
        var ended: Date
        var error: String?
    }

    let id: String
    let spec: JobSpec
    let created: Date
    /// Times the service took this job up again after a restart.
    let resumes: Int
    let live: LiveStatus
    /// Playback: the player's frame counters (audio, video).
    let sent: (audio: FrameStats, video: FrameStats)?
    /// Playback: where in its file it is (kept with the lease, for the next owner).
    let played: PlayedPosition?
    /// Recording: its proof chain's newest checkpoint (kept with the lease, for the next owner).
    let chainHead: ChainHead?
    /// Pause and resume; nil for a job that ended before this process.
    let pause: JobPause?
    /// The keys of a format whose frames name their key, where `POST …/keys` puts keys while
    /// the job runs. Held in this process's memory only: never persisted, never shown.
    let keys: (any IndexedKeying)?
    /// Relay: what it does now (waiting for the participant, sending, retrying its destination).
    let relay: RelayStatus?
    /// A recording's folder, held until its end is published (its files are listed through it,
    /// JobPublishing); not for as long as the job is kept (--keep-finished): a descriptor each.
    private let folder: Locked<RecordingFolder?>
    private let ending = Locked<(outcome: Outcome?, stopRequested: Bool)>((nil, false))
    private let task = Locked<Task<Void, Never>?>(nil)

    init(id: String, spec: JobSpec, created: Date, resumes: Int, live: LiveStatus, sent: (FrameStats, FrameStats)?, played: PlayedPosition? = nil,
         pause: JobPause? = nil, chainHead: ChainHead? = nil, keys: (any IndexedKeying)? = nil, relay: RelayStatus? = nil,
         folder: RecordingFolder? = nil) {
        self.folder = Locked(folder)
        self.keys = keys
        self.relay = relay
        self.chainHead = chainHead
        self.pause = pause
        self.id = id
        self.spec = spec
        self.created = created
        self.resumes = resumes
        self.live = live
        self.sent = sent
        self.played = played
    }

    var outcome: Outcome? { ending.withLock { $0.outcome } }

    /// Its held folder, given up: the caller's copy is the last.
    func releaseFolder() -> RecordingFolder? { folder.withLock { f in defer { f = nil }; return f } }

    var state: State {
        if let outcome { return outcome.state }
        if ending.withLock({ $0.stopRequested }) { return .stopping }
        return switch live.snapshot.phase {
        case .starting: .starting
        case .running: .running
        case .reconnecting: .reconnecting
        case .stopping, .done: .stopping
        }
    }

    var isActive: Bool { outcome == nil }

    /// Runs `body` as the job's task; its result becomes the outcome. Detached: a task made
    /// in a request handler inherits the service group's graceful-shutdown task-local, and the
    /// WebSocket client closes its connection to Janus when that fires, before the job could
    /// leave the room cleanly. The job manager stops jobs itself, by cancelling this task.
    func start(_ body: @escaping @Sendable () async -> Outcome) {
        task.withLock { $0 = Task.detached { [self] in
            let outcome = await body()
            ending.withLock { $0.outcome = outcome }
        } }
    }

    /// A job that ended before this process (read from the state folder), or never started.
    func settle(_ outcome: Outcome) { ending.withLock { $0.outcome = outcome } }

    /// Asks the job to stop (its files are finished) and waits until it has.
    func stop() async {
        ending.withLock { $0.stopRequested = true }
        let t = task.withLock { $0 }
        t?.cancel()
        await t?.value
    }

    /// Waits for the job's end without stopping it.
    func wait() async { await task.withLock({ $0 })?.value }

    var stopRequested: Bool { ending.withLock { $0.stopRequested } }
}

extension FrameProtection {
    /// The key store of a format whose frames name their key; nil for ECall's or none.
    var indexedKeys: (any IndexedKeying)? {
        if case .indexed(let p) = self { return p.keys }
        return nil
    }
}
