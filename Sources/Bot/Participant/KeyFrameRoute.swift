import Locking
import Synchronization

/// Where the branches of one PeerConnection's streams ask for keyframes: its subscription
/// (`Subscription.requestKeyFrame`, Janus by signalling), replaced with each new one. Held
/// weakly: the subscription's hooks hold the branches, and a strong route closed a cycle that
/// kept every last webrtcbin and its sockets alive.
final class KeyFrameRoute: Sendable {
    private let target = Locked<(@Sendable (String) -> Void)?>(nil)

    func route(to subscription: Subscription) {
        target.withLock { $0 = { [weak subscription] mid in Task { await subscription?.requestKeyFrame(mid: mid) } } }
    }

    func ask(mid: String) {
        let ask = target.withLock { $0 }
        ask?(mid)
    }
}
