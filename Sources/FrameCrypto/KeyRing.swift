import Foundation
import Synchronization
import Locking

/// The receive-side key ring of ECALL-WIRE §4: current, backup (the previous current), future.
///
/// Thread-safe; read once per frame from GStreamer streaming threads, so the read path
/// takes one short lock and allocates nothing.
public final class KeyRing: Sendable {
    /// How long a replaced key still opens frames (audio keeps the backup 30 s).
    public static let backupLifetime = 30.0
    /// How long a future key waits to be applied before it is forgotten.
    public static let futureLifetime = 60.0

    /// The keys a frame is tried with, in order.
    public struct Candidates: Sendable {
        public var current: CallKey?
        public var backup: CallKey?
        public var future: CallKey?
        public static let none = Candidates()

        /// Keys chosen by the caller (a key log's keys around a frame's time, one sender's key).
        public init(current: CallKey? = nil, backup: CallKey? = nil, future: CallKey? = nil) {
            self.current = current
            self.backup = backup
            self.future = future
        }
    }

    private struct Scheduled: Sendable {
        var key: CallKey
        var applyAt: Double
        var expiresAt: Double
    }

    private struct State: Sendable {
        var current: CallKey?
        var backup: (key: CallKey, expiresAt: Double)?
        var future: Scheduled?
    }

    /// Told of every key the ring is given and the Unix time from which it is in use (a key
    /// log, see `KeyLog`). Called outside the ring's lock, on the caller's thread.
    public typealias KeyObserver = @Sendable (_ key: CallKey, _ from: Double) -> Void

    private let state: Locked<State>
    private let clock: @Sendable () -> Double
    private let observer: KeyObserver?

    /// - Parameters:
    ///   - clock: Unix time in seconds; tests inject their own.
    ///   - observer: told of `current` (from now) and of each key given later.
    public init(current: CallKey? = nil, clock: (@Sendable () -> Double)? = nil, observer: KeyObserver? = nil) {
        self.state = Locked(State(current: current))
        let clock = clock ?? { Date().timeIntervalSince1970 }
        self.clock = clock
        self.observer = observer
        if let current { observer?(current, clock()) }
    }

    /// Makes `key` current at once (an emergency `send_aes_key`); the old current becomes the backup.
    public func setCurrent(_ key: CallKey) {
        let now = clock()
        state.withLock { Self.promote(key, in: &$0, now: now) }
        observer?(key, now)
    }

    /// A rotation: `key` opens frames from now on as the future key and becomes current
    /// at Unix time `time`.
    public func schedule(_ key: CallKey, at time: Double) {
        let now = clock()
        state.withLock { s in
            s.future = Scheduled(key: key, applyAt: time, expiresAt: now + Self.futureLifetime)
            Self.advance(&s, now: now)
        }
        observer?(key, time)
    }

    /// The key new frames are sealed with, after applying any rotation that is due.
    public var sealingKey: CallKey? {
        let now = clock()
        return state.withLock { s in
            Self.advance(&s, now: now)
            return s.current
        }
    }

    /// The keys to try on a received frame: current, then backup, then future.
    public var candidates: Candidates {
        let now = clock()
        return state.withLock { s in
            Self.advance(&s, now: now)
            return Candidates(current: s.current, backup: s.backup?.key, future: s.future?.key)
        }
    }

    private static func promote(_ key: CallKey, in s: inout State, now: Double) {
        if let old = s.current { s.backup = (old, now + backupLifetime) }
        s.current = key
    }

    /// Applies a due rotation and forgets expired keys.
    private static func advance(_ s: inout State, now: Double) {
        if let f = s.future {
            if now >= f.applyAt, f.applyAt <= f.expiresAt {
                s.future = nil
                promote(f.key, in: &s, now: now)
            } else if now >= f.expiresAt {
                s.future = nil
            }
        }
        if let b = s.backup, now >= b.expiresAt { s.backup = nil }
    }
}
