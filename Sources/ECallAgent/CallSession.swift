import Bot
import ECall
import FrameCrypto
import Foundation
import Comeback
import Logging
import Synchronization
import Locking

/// One call the agent is in: its key ring, the key host, the bot recording or playing in it,
/// the emergency key requests (ECALL-WIRE §7: 1 s dedupe, 3 s cooldown, 10 s timeout), and the
/// way back in when its media is lost (`rejoining`).
final class CallSession: Sendable {
    /// joining → joined ⇄ rejoining → leaving → left. joined → rejoining when the media ended
    /// while the call is on; rejoining → joined when a rejoin started new media. A call that
    /// ends (or the agent stopping) goes to leaving from any phase; joining → leaving means no
    /// bot is ever started, rejoining → leaving stops the rejoin.
    enum Phase: Sendable, Equatable { case joining, joined, rejoining, leaving, left }

    let callID: Int64
    /// The room of the invitation; a rejoin joins the room the backend names then (`room`).
    let roomID: Int64
    let ring: KeyRing
    /// The agent's logger with `call.id`.
    let log: Logger
    /// Where a `participant_accept_rejoin` is handed to the rejoin waiting for it.
    let accepts = AcceptWindow()
    private let state = Locked(State())

    struct Host: Sendable, Equatable {
        var userID: Int64
        var deviceID: Int64
        /// The host's published device key: a rotation must be wrapped with it.
        var publicKey: DevicePublicKey?
    }

    struct State {
        var phase = Phase.joining
        var host: Host?
        var media: Task<CallMediaEnd, Never>?
        /// Media started so far (0 before the first): a media's run number is its segment.
        var runs = 0
        var room: Int64?
        var rotation: Task<Void, Never>?
        var rejoin: Task<Void, Never>?
        /// The way back in: its budget of rejoin requests lasts across losses until the media
        /// runs long enough (`RejoinPolicy.stableAfter`); made at the first loss.
        var comeback: Comeback?
        var requestSent: Date?
    }

    /// `keyLog` is told of the first key and of every key the ring is given later (rotation,
    /// emergency, rejoin), with the time each comes into use.
    init(callID: Int64, roomID: Int64, key: CallKey, logger: Logger, keyLog: KeyLog? = nil) {
        self.callID = callID
        self.roomID = roomID
        ring = KeyRing(current: key, observer: keyLog?.observer(call: callID))
        log = logger
    }

    typealias Comeback = ComebackMachine<ContinuousClock.Instant, RejoinFailure>

    var phase: Phase { state.withLock { $0.phase } }

    /// The Janus room the media is (or was last) in.
    var room: Int64 { state.withLock { $0.room ?? roomID } }

    var host: Host? {
        get { state.withLock { $0.host } }
        set { state.withLock { $0.host = newValue } }
    }

    /// joining → joined, or rejoining → joined: starts the media in `room` (`start` gets its run
    /// number) and returns the run and its task, unless the call is no longer in phase `from`
    /// (then nothing starts and this returns nil).
    func startMedia(from: Phase, room: Int64, _ start: (Int) -> Task<CallMediaEnd, Never>) -> (run: Int, task: Task<CallMediaEnd, Never>)? {
        state.withLock { s in
            guard s.phase == from, from == .joining || from == .rejoining else { return nil }
            let run = s.runs
            let task = start(run)
            s.runs += 1
            s.phase = .joined
            s.media = task
            s.room = room
            if from == .rejoining {
                s.rejoin = nil
                _ = s.comeback?.handle(.succeeded, at: .now)
            }
            return (run, task)
        }
    }

    /// joined → rejoining: media run `run` ended by itself; returns what the comeback does
    /// first. Nil if the call is not joined with that run (it is leaving, or rejoining
    /// already: never two rejoins at once). Media that ran at least `policy.stableAfter`
    /// earned a full set of rejoin attempts again.
    func lost(run: Int, policy: ComebackPolicy, at now: ContinuousClock.Instant) -> Comeback.Action? {
        state.withLock { s in
            guard s.phase == .joined, s.runs == run + 1 else { return nil }
            s.phase = .rejoining
            s.media?.cancel()  // it has ended; a stale report must not leave it running
            s.media = nil
            if s.comeback == nil { s.comeback = Comeback(policy) }
            return s.comeback?.handle(.lost(), at: now)
        }
    }

    /// While rejoining: tells the comeback what happened and returns what it does next; nil
    /// when the call is no longer rejoining.
    func rejoin(_ event: Comeback.Event, at now: ContinuousClock.Instant) -> Comeback.Action? {
        state.withLock { s in
            guard s.phase == .rejoining else { return nil }
            return s.comeback?.handle(event, at: now)
        }
    }

    /// The task getting the agent back into the call. A call that is not rejoining (leaving
    /// already) takes none: the task is cancelled at once.
    func setRejoin(_ task: Task<Void, Never>) {
        state.withLock { s in
            if s.phase == .rejoining { s.rejoin = task } else { task.cancel() }
        }
    }

    /// As key host: the task rotating the key (replacing, and cancelling, any earlier one). A
    /// call that is leaving takes none: the task is cancelled at once.
    func setRotation(_ task: Task<Void, Never>?) {
        state.withLock { s in
            s.rotation?.cancel()
            s.rotation = nil
            if s.phase == .leaving || s.phase == .left { task?.cancel() } else { s.rotation = task }
        }
    }

    /// → leaving → left: stops the rotation, a rejoin and the bot, and waits for the bot (files
    /// are finished). Returns whether a bot had started (joined, or rejoining after one). The
    /// rejoin is cancelled, not awaited: it may be the caller (a rejoin that gave up).
    func end() async -> Bool {
        let (media, wasJoined) = state.withLock { s in
            defer {
                s.phase = .leaving
                s.rotation?.cancel()
                s.rotation = nil
                s.rejoin?.cancel()
                s.rejoin = nil
                s.media = nil
            }
            return (s.media, s.phase == .joined || s.phase == .rejoining)
        }
        accepts.close()
        media?.cancel()
        _ = await media?.value
        state.withLock { $0.phase = .left }
        return wasJoined
    }

    /// A frame no key opened: whether to send `request_aes_key` now. Frames fail in bursts:
    /// after a request, the next waits for its answer plus 3 s (cooldown), or 10 s without one.
    func shouldRequestKey(now: Date = Date()) -> Bool {
        state.withLock { s in
            if let sent = s.requestSent, now < sent.addingTimeInterval(10) { return false }
            s.requestSent = now
            return true
        }
    }

    /// The key came (`send_aes_key`): requests may start again after the 3 s cooldown.
    func keyArrived(now: Date = Date()) {
        state.withLock { s in
            if s.requestSent != nil { s.requestSent = now.addingTimeInterval(3 - 10) }
        }
    }
}
