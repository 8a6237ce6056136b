public import Foundation
import GStreamerKit
import Synchronization
import Locking

/// What a running recorder or player is doing now, for a service to show while it runs: its
/// phase, its last problem, and (recorder) its tracks with their counters. Written by the
/// participant, read by anyone, at any time.
public final class LiveStatus: Sendable {
    public enum Phase: String, Sendable, Codable {
        /// Connecting and joining for the first time.
        case starting
        /// In the room, media flowing or waiting for publishers.
        case running
        /// Janus, the WebSocket or the media path was lost; coming back.
        case reconnecting
        /// Finishing files and leaving.
        case stopping
        /// Ended (cleanly or not: the job's result says which).
        case done
    }

    public struct Snapshot: Sendable {
        public var phase = Phase.starting
        /// The last loss or output error, as the logs said it; kept after recovery.
        public var lastError: String?
        public var lastErrorTime: Date?
        /// Recorder: every track so far, finished and live, with its frame counters.
        public var feeds: [RecordingManifest.Feed] = []
        /// Times the participant lost Janus or its media path and came back.
        public var comebacks = 0
        /// Recorder: the selected ICE candidate pair, e.g. `relay/udp→host`.
        public var candidatePair: String?
    }

    private let value = Locked(Snapshot())

    public init() {}

    public var snapshot: Snapshot { value.withLock { $0 } }

    func set(_ phase: Phase) {
        value.withLock { s in
            // A done job stays done.
            guard s.phase != .done else { return }
            if s.phase == .reconnecting, phase == .running { s.comebacks += 1 }
            s.phase = phase
        }
    }

    func noteError(_ text: String) {
        value.withLock { s in
            s.lastError = text
            s.lastErrorTime = Date()
        }
    }

    /// The recorder's tracks, and its newest problem (a loss, an output that failed) if it is
    /// newer than the one shown.
    func update(from manifest: RecordingManifest) {
        let problems = manifest.gaps.map { ($0.start, $0.cause) } + manifest.errors.map { ($0.time, $0.error) }
        let newest = problems.max { $0.0 < $1.0 }
        value.withLock { s in
            s.feeds = manifest.feeds
            s.candidatePair = manifest.candidatePair?.summary
            if let newest, newest.0 > s.lastErrorTime ?? .distantPast {
                s.lastError = newest.1
                s.lastErrorTime = newest.0
            }
        }
    }
}
