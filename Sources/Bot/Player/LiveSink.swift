import GStreamerKit
import Locking
import Synchronization

/// The publisher's end of a live source: the `appsrc`s of the publishing pipeline of the moment
/// (play-live-*.pipeline), fed from the source pipeline's streaming threads. A source that drops
/// and a publisher that rejoins each make a new pipeline on one side; this joins them.
///
/// Timestamps: each frame keeps the spacing the source gave it (its running time in the source
/// pipeline), moved onto the publishing pipeline's clock by one offset for audio and video
/// (taken at the first frame, so they stay in sync). A source's timeline that jumps (a new
/// connection, a sender that restarted, a stall of more than `tolerance`) is anchored again at
/// the frame's arrival; each track's times only go forward.
final class LiveSink: Sendable {
    /// How far a frame's mapped time may be from its arrival before the timeline is anchored anew.
    static let tolerance: UInt64 = 1_000_000_000

    private struct State {
        var pipeline: Pipeline?
        var audio: AppSource?
        var video: AppSource?
        /// Video is pushed from a keyframe on: one after each attach and each new connection.
        var videoWaitsForKey = true
        var anchor: (source: UInt64, publish: UInt64)?
        var last = (audio: UInt64(0), video: UInt64(0))
        var pushed = (audio: 0, video: 0)
        /// Frames that came with no publisher to take them (joining, rejoining, no video track).
        var unsent = 0
    }
    private let state = Locked(State())

    /// The publishing pipeline from now on (after a rejoin, its new one).
    func attach(pipeline: Pipeline, audio: AppSource, video: AppSource?) {
        state.withLock { s in
            (s.pipeline, s.audio, s.video) = (pipeline, audio, video)
            s.videoWaitsForKey = true
            s.anchor = nil
            s.last = (0, 0)
        }
    }

    /// No publisher for now: frames are counted and dropped.
    func detach() { state.withLock { s in (s.pipeline, s.audio, s.video) = (nil, nil, nil) } }

    /// A new connection to the source: its timeline starts over, its video at a keyframe.
    func newConnection() {
        state.withLock { s in
            s.anchor = nil
            s.videoWaitsForKey = true
        }
    }

    var counts: (audio: Int, video: Int, unsent: Int) { state.withLock { ($0.pushed.audio, $0.pushed.video, $0.unsent) } }

    /// One frame from the source (raw audio, or an H.264 access unit); false if not pushed.
    @discardableResult
    func push(_ bytes: UnsafeRawBufferPointer, running: UInt64?, key: Bool, video: Bool) -> Bool {
        state.withLock { s in
            guard let pipeline = s.pipeline, let source = video ? s.video : s.audio, let now = pipeline.runningTime else {
                s.unsent += 1
                return false
            }
            if video, s.videoWaitsForKey {
                guard key else { s.unsent += 1; return false }
                s.videoWaitsForKey = false
            }
            var t = now
            if let running {
                if let a = s.anchor, running >= a.source, case let mapped = a.publish + (running - a.source),
                   mapped + Self.tolerance >= now, mapped <= now + Self.tolerance {
                    t = mapped
                } else {
                    s.anchor = (running, now)
                }
            }
            let last = video ? s.last.video : s.last.audio
            if last > 0, t <= last { t = last + 1 }
            if video { s.last.video = t } else { s.last.audio = t }
            guard source.push(bytes, pts: t, delta: !key) else { s.unsent += 1; return false }
            if video { s.pushed.video += 1 } else { s.pushed.audio += 1 }
            return true
        }
    }
}
