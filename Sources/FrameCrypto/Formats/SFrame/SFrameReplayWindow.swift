import Locking
import Synchronization

/// A receiver's replay check for one sender's KID (RFC 9605 §9.4 and §7.3 leave anti-replay to
/// the application and point at SRTP's counter window, RFC 3711 §3.3.2): a CTR is accepted once,
/// and only if it is above the highest seen or one of the 127 below it not seen yet.
public final class SFrameReplayWindow: Sendable {
    /// How many CTR values back from the highest one a frame may still arrive (reordering).
    public static let size = 128

    private struct State {
        var highest: UInt64 = 0
        /// Bit n set: CTR `highest - n` was accepted. Empty until the first frame.
        var seen: UInt128 = 0
    }
    private let state = Locked(State())

    public init() {}

    /// Records `ctr` and returns true if it was not seen before and is not too old; false for a
    /// replay. Call it only after `SFrameOpener.open` succeeded: an unauthenticated CTR would
    /// let a forger move the window forward and make real frames look old.
    public func accept(ctr: UInt64) -> Bool {
        state.withLock { s in
            if s.seen == 0 || ctr > s.highest {
                let shift = s.seen == 0 ? UInt64(Self.size) : ctr - s.highest
                s.seen = shift >= UInt64(Self.size) ? 1 : s.seen << shift | 1
                s.highest = ctr
                return true
            }
            let age = s.highest - ctr
            guard age < UInt64(Self.size) else { return false }
            let bit: UInt128 = 1 << age
            guard s.seen & bit == 0 else { return false }
            s.seen |= bit
            return true
        }
    }
}
