import Foundation
import Locking
import Synchronization

/// Keyframe requests for one video track, at most one a second, made by `ask` (the recorder
/// asks Janus by signalling, `Subscription.requestKeyFrame`; RTCP PLIs from a recvonly peer do
/// not reliably reach the publisher through Janus). Any thread; `ask` must not block.
final class KeyFrameRequests: Sendable {
    private let ask: @Sendable () -> Void
    private let last = Atomic<Int64>(0)
    private let count = Atomic<Int>(0)
    static let minimumInterval: Int64 = 1000  // ms

    init(ask: @escaping @Sendable () -> Void) { self.ask = ask }

    var sent: Int { count.load(ordering: .relaxed) }

    func request() {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let previous = last.load(ordering: .relaxed)
        guard now - previous >= Self.minimumInterval,
              last.compareExchange(expected: previous, desired: now, ordering: .relaxed).exchanged else { return }
        count.add(1, ordering: .relaxed)
        ask()
    }
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
