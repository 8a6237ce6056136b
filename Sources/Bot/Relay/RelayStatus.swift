public import Foundation
import Synchronization
import Locking

/// What a relay is doing now, for the log's last line and a service to show: the phase, the
/// destination's state and its last error. Written by the relay, read by anyone.
public final class RelayStatus: Sendable {
    public enum Phase: String, Sendable, Codable {
        /// Joining, or in the room waiting for the participant.
        case waiting
        /// The destination took the graph; frames go out as they come.
        case sending
        /// The destination failed; trying again after a backoff.
        case retrying
        case done
    }

    public struct Snapshot: Sendable {
        public var phase = Phase.waiting
        /// The destination without its secret parts (`RelayDestination.description`).
        public var destination: String?
        public var lastError: String?
        public var lastErrorTime: Date?
        /// Times the relay lost Janus and was back in the room.
        public var comebacks = 0
        /// Since when the destination has taken frames without failing (nil while retrying):
        /// serve's `relay.started` once that held a few seconds.
        public var sendingSince: Date?
        /// Outages of the destination: the first failure, and each failure of an output that
        /// had held for `RelayStatus.held` (a retry that fails again is the same outage).
        public var outages = 0
        /// When the last outage began, and why.
        public var outageSince: Date?
        public var outageReason: String?
    }

    /// An output that ran this long and then failed is a new outage (and its backoff starts over).
    public static let held: Duration = .seconds(10)

    private let value = Locked(Snapshot())

    public init() {}

    public var snapshot: Snapshot { value.withLock { $0 } }

    func cameBack() { value.withLock { $0.comebacks += 1 } }

    /// An output is up: frames go to the destination.
    func outputUp(destination: String) {
        set(.sending, destination: destination)
        value.withLock { s in if s.sendingSince == nil { s.sendingSince = Date() } }
    }

    /// The destination failed; `afterHolding`: the output had run for `held` (or none had
    /// failed yet), so this begins an outage.
    func destinationFailed(_ why: String, destination: String?, afterHolding: Bool) {
        set(.retrying, destination: destination, error: why)
        value.withLock { s in
            s.sendingSince = nil
            guard afterHolding || s.outages == 0 else { return }
            (s.outages, s.outageSince, s.outageReason) = (s.outages + 1, Date(), why)
        }
    }

    func set(_ phase: Phase, destination: String? = nil, error: String? = nil) {
        value.withLock { s in
            guard s.phase != .done else { return }
            s.phase = phase
            if let destination { s.destination = destination }
            if let error { (s.lastError, s.lastErrorTime) = (error, Date()) }
        }
    }
}

/// A relay's counters, bumped from streaming threads.
final class RelayCounts: Sendable {
    let audioSent = Counter()
    let videoSent = Counter()
    /// Opened frames that arrived while no output was up (the destination down, retrying).
    let unsent = Counter()
    /// Opened video before the output's first keyframe (a new output starts on one).
    let beforeKeyFrame = Counter()
    /// Opened frames held back while the relay was paused (asked, not lost).
    let paused = Counter()
    /// Output graphs started, and failures (a start that failed, or a running output that did).
    let attempts = Counter()
    let failures = Counter()
    /// Frames an output took and dropped: the destination slower than the stream (its queue
    /// full), or its queue thrown away when it failed.
    let droppedInOutput = Counter()
}
