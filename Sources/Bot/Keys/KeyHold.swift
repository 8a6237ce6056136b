import Foundation
import Locking
import Synchronization

/// How much of a feed a key hold may keep: frames that did not open with the keys known are
/// held while a new key may be on its way (the ECall agent asked the key host at the first of
/// them), at most this long and this many. Past a bound they are dropped and counted, as they
/// were before holds existed.
public struct KeyHoldBounds: Sendable, Equatable {
    /// From the first frame held: the key host's answer takes well under a second (the agent
    /// tests measure 0.1–0.6 s); three times that and more is not worth the delay.
    public var seconds: Double = 3
    /// The direct receive path hands on a stream's first 1–2 s at once (its lip-sync hold),
    /// then 3 s more arrive in real time: at 50 audio frames a second, 250. Video sends fewer.
    public var frames = 300
    /// A video feed's frames are large: 3 s of a 10 Mbit/s stream is under 4 MiB.
    public var bytes = 8 << 20

    public init() {}
    public init(seconds: Double, frames: Int, bytes: Int) {
        self.seconds = seconds
        self.frames = frames
        self.bytes = bytes
    }
    /// No frame is ever held.
    public static let none = KeyHoldBounds(seconds: 0, frames: 0, bytes: 0)
}

/// One feed's hold episode, a state machine with an injected clock: idle; holding (since the
/// first frame held, how many, how many bytes); spent (a bound was hit: frames that fail are
/// dropped at once until one opens, so a key that never comes costs one hold, not one per 3 s).
/// A frame that opens ends the episode either way.
package final class KeyHold: Sendable {
    private enum State: Equatable {
        case idle
        case holding(since: Double, frames: Int, bytes: Int)
        case spent
    }
    let bounds: KeyHoldBounds
    private let clock: @Sendable () -> Double
    private let state = Locked<State>(.idle)
    /// Whether the state is not idle: read on every frame that opens, so the lock is taken
    /// only after a frame failed.
    private let active = Atomic<Bool>(false)

    /// `clock`: seconds on a monotonic clock (tests inject their own).
    init(_ bounds: KeyHoldBounds, clock: (@Sendable () -> Double)? = nil) {
        self.bounds = bounds
        self.clock = clock ?? { ProcessInfo.processInfo.systemUptime }
    }

    /// A frame of `bytes` failed with the keys known: whether it is held (else dropped now).
    func admit(bytes: Int) -> Bool {
        let now = clock()
        let b = bounds
        return state.withLock { s in
            active.store(true, ordering: .relaxed)
            switch s {
            case .spent: return false
            case .idle:
                guard b.frames >= 1, bytes <= b.bytes, b.seconds > 0 else { s = .spent; return false }
                s = .holding(since: now, frames: 1, bytes: bytes)
                return true
            case .holding(let since, let frames, let held):
                guard now - since <= b.seconds, frames < b.frames, held + bytes <= b.bytes else { s = .spent; return false }
                s = .holding(since: since, frames: frames + 1, bytes: held + bytes)
                return true
            }
        }
    }

    /// A frame opened: the episode is over.
    func opened() {
        guard active.load(ordering: .relaxed) else { return }
        active.store(false, ordering: .relaxed)
        state.withLock { $0 = .idle }
    }

    /// The held frames were settled (each opened or dropped): a new failure starts a new
    /// episode, unless this one is spent.
    func settled() {
        state.withLock { s in
            if case .holding = s { s = .idle; active.store(false, ordering: .relaxed) }
        }
    }

    /// Frames held now (for tests and logs).
    var held: Int {
        state.withLock { if case .holding(_, let n, _) = $0 { n } else { 0 } }
    }
    var isSpent: Bool { state.withLock { $0 == .spent } }
}
