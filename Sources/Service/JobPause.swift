import Bot
import Foundation

/// A job's pause switch: its recorder's or its player's (`POST …/{id}/pause`, `…/resume`).
/// Its pauses are kept with the job, so a paused job stays paused through a restart.
enum JobPause: Sendable {
    case recording(RecordingPauses)
    case playback(PlaybackPauses)
    /// Frames held back while paused; the stream stays open.
    case relay(RecordingPauses)

    /// Starts paused if the last of `pauses` (the job's, from before a restart) is still open.
    init(_ kind: JobSpec.Kind, resuming pauses: [RecordingManifest.Pause]?) {
        let open = pauses?.last.flatMap { $0.end == nil ? $0.start : nil }
        switch kind {
        case .recording: self = .recording(RecordingPauses(paused: open != nil, since: open ?? Date()))
        case .playback: self = .playback(PlaybackPauses(paused: open != nil, since: open ?? Date()))
        case .relay: self = .relay(RecordingPauses(paused: open != nil, since: open ?? Date()))
        }
    }

    var isPaused: Bool {
        switch self {
        case .recording(let p), .relay(let p): p.isPaused
        case .playback(let p): p.isPaused
        }
    }

    /// The pauses of this run (a recording's earlier ones are in its manifest).
    var all: [RecordingManifest.Pause] {
        switch self {
        case .recording(let p), .relay(let p): p.all
        case .playback(let p): p.all
        }
    }

    /// Pauses or resumes; false if it already was so.
    func set(paused: Bool) -> Bool {
        switch self {
        case .recording(let p), .relay(let p): paused ? p.pause() : p.resume()
        case .playback(let p): paused ? p.pause() : p.resume()
        }
    }
}
