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
    }

    private let value = Locked(Snapshot())

    public init() {}

    public var snapshot: Snapshot { value.withLock { $0 } }

    func cameBack() { value.withLock { $0.comebacks += 1 } }

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
}
