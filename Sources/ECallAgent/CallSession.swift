import Bot
import ECall
import FrameCrypto
import Foundation
import Logging
import Synchronization

/// One call the agent is in: its key ring, the key host, the bot recording or playing in it,
/// and the emergency key requests (ECALL-WIRE §7: 1 s dedupe, 3 s cooldown, 10 s timeout).
final class CallSession: Sendable {
    /// joining → joined → leaving → left; or joining → leaving → left when the call ends (or
    /// the agent stops) while the join waits on the backend: then no bot is ever started.
    enum Phase: Sendable, Equatable { case joining, joined, leaving, left }

    let callID: Int64
    let roomID: Int64
    let ring: KeyRing
    /// The agent's logger with `call.id`.
    let log: Logger
    private let state = Mutex(State())

    struct Host: Sendable, Equatable {
        var userID: Int64
        var deviceID: Int64
        /// The host's published device key: a rotation must be wrapped with it.
        var publicKey: DevicePublicKey?
    }

    struct State {
        var phase = Phase.joining
        var host: Host?
        var media: Task<Void, Never>?
        var rotation: Task<Void, Never>?
        var requestSent: Date?
    }

    init(callID: Int64, roomID: Int64, key: CallKey, logger: Logger) {
        self.callID = callID
        self.roomID = roomID
        ring = KeyRing(current: key)
        log = logger
    }

    var phase: Phase { state.withLock { $0.phase } }

    var host: Host? {
        get { state.withLock { $0.host } }
        set { state.withLock { $0.host = newValue } }
    }

    /// joining → joined: starts the bot, unless the call is leaving already (then nothing starts
    /// and this returns false).
    func joined(startingMedia start: () -> Task<Void, Never>) -> Bool {
        state.withLock { s in
            guard s.phase == .joining else { return false }
            s.phase = .joined
            s.media = start()
            return true
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

    /// → leaving → left: stops the rotation and the bot and waits for the bot (files are
    /// finished). Returns whether the call had been joined (a bot had started).
    func end() async -> Bool {
        let (media, wasJoined) = state.withLock { s in
            defer {
                s.phase = .leaving
                s.rotation?.cancel()
                s.rotation = nil
                s.media = nil
            }
            return (s.media, s.phase == .joined)
        }
        media?.cancel()
        await media?.value
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
