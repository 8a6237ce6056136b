public import Foundation
public import GStreamerKit
import Synchronization
import Locking

/// Pause and resume of a recording (`POST /v1/recordings/{id}/pause`): while paused every
/// track's frames are opened only to be counted (`paused_frames`) and dropped before the file
/// and the mix; the files go on after resume, one per participant, with a media-time gap; video
/// resumes on a keyframe, which is asked for at once. The manifest lists each pause.
public final class RecordingPauses: Sendable {
    /// Read by every track's pause gate, per frame.
    public let flag: PauseFlag
    private let list: Locked<[RecordingManifest.Pause]>

    /// `paused`: the recording starts paused (a paused job taken up again after a restart).
    public init(paused: Bool = false, since: Date = Date()) {
        flag = PauseFlag(paused: paused)
        list = Locked(paused ? [.init(start: since)] : [])
    }

    public var isPaused: Bool { flag.isPaused }

    /// Pauses; false if it already was.
    @discardableResult
    public func pause(at time: Date = Date()) -> Bool {
        list.withLock { list in
            guard !flag.isPaused else { return false }
            flag.set(true)
            list.append(.init(start: time))
            return true
        }
    }

    /// Resumes; false if it was not paused.
    @discardableResult
    public func resume(at time: Date = Date()) -> Bool {
        list.withLock { list in
            guard flag.isPaused else { return false }
            flag.set(false)
            if let last = list.indices.last, list[last].end == nil { list[last].close(at: time) }
            return true
        }
    }

    /// Drops every frame from now on without recording a pause: a job that may no longer
    /// write (fenced in a cluster) stops at once, its files finished after.
    public func closeGate() { flag.set(true) }

    /// Every pause so far, the current one open.
    public var all: [RecordingManifest.Pause] { list.withLock { $0 } }

    /// Takes up the pauses of an earlier process's manifest (a restart): one it was killed in
    /// goes on if this recording starts paused, else it ends when that process stopped.
    func adopt(_ earlier: [RecordingManifest.Pause], awaySince: Date) {
        list.withLock { list in
            var before = earlier
            if let last = before.indices.last, before[last].end == nil {
                // Paused still: the earlier pause goes on instead of the one made at init.
                if flag.isPaused, !list.isEmpty { list.removeFirst() } else { before[last].close(at: awaySince) }
            }
            list = before + list
        }
    }
}

extension RecordingManifest {
    /// A time the recording was paused (wall clock): nothing of the call was written.
    public struct Pause: Codable, Sendable, Equatable {
        public var start: Date
        /// nil while it lasts.
        public var end: Date?
        public var seconds: Double?

        public init(start: Date) { self.start = start }

        mutating func close(at end: Date) {
            self.end = end
            seconds = end.timeIntervalSince(start)
        }
    }
}
