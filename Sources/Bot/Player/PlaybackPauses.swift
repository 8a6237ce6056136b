public import Foundation
import GStreamerKit
import Synchronization
import Locking

/// Pause and resume of a playback (`POST /v1/playbacks/{id}/pause`): the file stops where it is
/// and goes on from there. The publisher stays in the room; nothing is sent meanwhile.
public final class PlaybackPauses: Sendable {
    private struct State {
        var paused = false
        var list: [RecordingManifest.Pause] = []
        /// The running media's way to stop and go on; nil before the media path is up.
        var apply: (@Sendable (Bool) -> Void)?
    }
    private let state = Locked(State())

    /// `paused`: the playback starts paused (a paused job taken up again after a restart).
    public init(paused: Bool = false, since: Date = Date()) {
        if paused { state.withLock { $0.paused = true; $0.list = [.init(start: since)] } }
    }

    public var isPaused: Bool { state.withLock { $0.paused } }
    /// Every pause so far, the current one open.
    public var all: [RecordingManifest.Pause] { state.withLock { $0.list } }

    /// Pauses; false if it already was. Applied under the lock, so a pause and a resume
    /// reach the media in the order they were asked.
    @discardableResult
    public func pause(at time: Date = Date()) -> Bool {
        state.withLock { s in
            guard !s.paused else { return false }
            s.paused = true
            s.list.append(.init(start: time))
            s.apply?(true)
            return true
        }
    }

    /// Resumes; false if it was not paused.
    @discardableResult
    public func resume(at time: Date = Date()) -> Bool {
        state.withLock { s in
            guard s.paused else { return false }
            s.paused = false
            if let last = s.list.indices.last, s.list[last].end == nil { s.list[last].close(at: time) }
            s.apply?(false)
            return true
        }
    }

    /// The media path is up: from now on pauses reach `apply`, and a pause asked for before
    /// (or carried over) is applied at once.
    func attach(_ apply: @escaping @Sendable (Bool) -> Void) {
        state.withLock { s in
            s.apply = apply
            if s.paused { apply(true) }
        }
    }

    func detach() { state.withLock { $0.apply = nil } }
}

/// What pausing does to one pipeline: the stream is held before the pacers (files) or the
/// payloaders (live sources); at resume the pacers' offset grows by the time it was held, so
/// the file goes on at real time from where it stopped instead of catching up in a burst.
final class MediaPause: Sendable {
    private let pipeline: Pipeline
    private let pacers: [Element]
    private let pads: [Pad]
    private let holds = Locked<(probes: [PadProbe], since: UInt64?)>(([], nil))

    init(_ media: Player.Media) throws {
        pipeline = media.pipeline
        pacers = media.pacers
        if pacers.isEmpty {
            pads = try ["pay", "vpay"].compactMap { try? media.pipeline.element(named: $0) }.map { try $0.staticPad("sink") }
        } else {
            pads = try pacers.map { try $0.staticPad("sink") }
        }
    }

    func apply(_ paused: Bool) {
        holds.withLock { h in
            if paused {
                guard h.probes.isEmpty else { return }
                h.since = pipeline.runningTime
                h.probes = pads.map { $0.addBufferHold() }
                return
            }
            if let since = h.since, let now = pipeline.runningTime, now > since {
                for pacer in pacers {
                    let offset = Int64((try? pacer.get("ts-offset")) ?? "0") ?? 0
                    try? pacer.set("ts-offset", String(offset + Int64(now - since)))
                }
            }
            for probe in h.probes { probe.remove() }
            h = ([], nil)
        }
    }
}
