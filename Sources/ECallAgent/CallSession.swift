import Bot
import ECall
public import FrameCrypto
import Foundation
import Synchronization

/// One call the agent is in: its key ring, the key host, the bot recording or playing in it,
/// and the emergency key requests (ECALL-WIRE §7: 1 s dedupe, 3 s cooldown, 10 s timeout).
final class CallSession: Sendable {
    let callID: Int64
    let roomID: Int64
    let ring: KeyRing
    private let state = Mutex(State())

    struct Host: Sendable, Equatable {
        var userID: Int64
        var deviceID: Int64
        /// The host's published device key: a rotation must be wrapped with it.
        var publicKey: DevicePublicKey?
    }

    struct State {
        var host: Host?
        var media: Task<Void, Never>?
        var rotation: Task<Void, Never>?
        var requestSent: Date?
    }

    init(callID: Int64, roomID: Int64, key: CallKey) {
        self.callID = callID
        self.roomID = roomID
        ring = KeyRing(current: key)
    }

    var host: Host? {
        get { state.withLock { $0.host } }
        set { state.withLock { $0.host = newValue } }
    }

    func setMedia(_ task: Task<Void, Never>) { state.withLock { $0.media = task } }

    /// As key host: the task rotating the key (replacing, and cancelling, any earlier one).
    func setRotation(_ task: Task<Void, Never>?) {
        state.withLock { s in
            s.rotation?.cancel()
            s.rotation = task
        }
    }

    /// Stops the bot in the call and waits for it (files are finished).
    func end() async {
        setRotation(nil)
        let task = state.withLock { s in defer { s.media = nil }; return s.media }
        task?.cancel()
        await task?.value
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
