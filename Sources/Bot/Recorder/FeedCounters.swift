import Dispatch
import Foundation
import Locking
import Synchronization

/// Keyframe requests for one video track, at most one a second, made by `ask` (the recorder
/// asks Janus by signalling, `Subscription.requestKeyFrame`; RTCP PLIs from a recvonly peer do
/// not reliably reach the publisher through Janus). A request within the second after the last
/// is not dropped but made at the second's end, unless a keyframe arrives first: a picture lost
/// just after the branch's first request otherwise waited for the sender's next keyframe (2 of
/// a test's pictures, `DirectReceiveTests.lostVideoCostsOnlyItsPictures`). Any thread; `ask`
/// must not block.
final class KeyFrameRequests: Sendable {
    private let ask: @Sendable () -> Void
    private let state = Mutex<(last: Int64, pending: Bool)>((0, false))
    private let count = Atomic<Int>(0)
    static let minimumInterval: Int64 = 1000  // ms

    init(ask: @escaping @Sendable () -> Void) { self.ask = ask }

    var sent: Int { count.load(ordering: .relaxed) }

    func request() {
        let now = Self.now()
        let wait: Int64? = state.withLock { s in
            if now - s.last >= Self.minimumInterval { s = (now, false); return 0 }
            if s.pending { return nil }
            s.pending = true
            return s.last + Self.minimumInterval - now
        }
        guard let wait else { return }
        if wait == 0 { send(); return }
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(Int(wait))) { [weak self] in self?.trailing() }
    }

    /// A keyframe arrived: it answers a request still waiting for its turn.
    func keyFrameArrived() { state.withLock { $0.pending = false } }

    private func trailing() {
        let now = Self.now()
        let due = state.withLock { s in
            guard s.pending else { return false }
            s = (now, false)
            return true
        }
        if due { send() }
    }

    private func send() {
        count.add(1, ordering: .relaxed)
        ask()
    }

    private static func now() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }
}

/// A count bumped from streaming threads.
final class Counter: Sendable {
    private let count = Atomic<Int>(0)
    func increment(by n: Int = 1) { count.add(n, ordering: .relaxed) }
    var value: Int { count.load(ordering: .relaxed) }
}

/// A video file's resolution, set from a streaming thread.
final class Resolution: Sendable {
    private let state = Locked<(width: Int, height: Int)?>(nil)
    func set(width: Int, height: Int) { state.withLock { $0 = (width, height) } }
    var value: (width: Int, height: Int)? { state.withLock { $0 } }
}

/// First and last presentation time seen on a track (pipeline running time, seconds).
final class MediaTimes: Sendable {
    private let state = Locked<(first: Double?, last: Double?)>((nil, nil))
    func mark(_ t: Double) { state.withLock { $0 = ($0.first ?? t, t) } }
    var first: Double? { state.withLock { $0.first } }
    var last: Double? { state.withLock { $0.last } }
}
