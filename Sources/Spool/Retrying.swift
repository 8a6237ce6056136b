public import Comeback
public import Foundation

/// An entry a `SpoolRunner` retries: how often it was tried, when it may be tried again (wall
/// clock, so the schedule survives a restart), and why the last try failed.
public protocol Retrying: Codable, Sendable {
    var attempts: Int { get set }
    var notBefore: Date { get set }
    var created: Date { get }
    var lastError: String? { get set }
}

/// The shared `Backoff` counted by tries (an entry's tries survive a restart): `first`,
/// doubling to `maximum`, each delay scaled by a jitter in 0.75...1 so that many entries failed
/// together do not come back together; `giveUpAfter` (from an entry's creation) ends the retries.
public struct RetrySchedule: Sendable {
    public var first: Duration
    public var maximum: Duration
    public var giveUpAfter: Duration?

    public init(first: Duration, maximum: Duration, giveUpAfter: Duration? = nil) {
        (self.first, self.maximum, self.giveUpAfter) = (first, maximum, giveUpAfter)
    }

    public var backoff: Backoff { Backoff(initial: first, cap: maximum, jitter: 0.75...1) }

    /// The delay before the next try, after `attempts` failed tries (1 for the first failure).
    public func delay(afterAttempts attempts: Int) -> Duration {
        backoff.delay(afterFailures: attempts - 1)
    }

    /// The same with a given jitter factor (tests).
    public func delay(afterAttempts attempts: Int, jitter: Double) -> Duration {
        backoff.base(afterFailures: attempts - 1) * jitter
    }

    /// Whether an entry created at `created` has run out of time at `now`.
    public func expired(created: Date, now: Date) -> Bool {
        guard let giveUpAfter else { return false }
        return now.timeIntervalSince(created) >= giveUpAfter.seconds
    }
}

/// What one try of an entry came to.
public enum RetryOutcome: Sendable, Equatable {
    /// Done: the entry is removed.
    case done
    /// Failed for now: tried again after the schedule's delay (or given up once it expired).
    case retry(String)
    /// Can never succeed (its file is gone): removed, reported.
    case giveUp(String)
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) * 1e-18 }
}
