internal import CGStreamer
internal import CGStreamerShims
import Synchronization

/// Whether a recording is paused: one flag read by every track's `addPauseGate` probe, per
/// buffer (an atomic load), so pausing reaches every track at once, later ones included.
public final class PauseFlag: Sendable {
    private let paused: Atomic<Bool>
    public init(paused: Bool = false) { self.paused = Atomic(paused) }
    public var isPaused: Bool { paused.load(ordering: .acquiring) }
    public func set(_ value: Bool) { paused.store(value, ordering: .releasing) }
}

private final class PauseGateBox: Sendable {
    let flag: PauseFlag
    let keyFrames: Bool
    let onDrop: @Sendable () -> Void
    let onWaitingForKey: @Sendable () -> Void
    /// Set while paused; cleared by the first keyframe after (video): until then the pictures
    /// refer to ones never written.
    let needKey = Atomic<Bool>(false)
    init(_ flag: PauseFlag, keyFrames: Bool, onDrop: @escaping @Sendable () -> Void, onWaitingForKey: @escaping @Sendable () -> Void) {
        self.flag = flag
        self.keyFrames = keyFrames
        self.onDrop = onDrop
        self.onWaitingForKey = onWaitingForKey
    }
}

extension Pad {
    /// Drops every buffer while `flag` is paused (`onDrop` counts them). With `keyFrames`, a
    /// track resumes on its next keyframe (buffers flagged delta-unit are dropped until one
    /// passes, `onWaitingForKey` called for each so the caller can ask the sender for one).
    public func addPauseGate(_ flag: PauseFlag, keyFrames: Bool, onDrop: @escaping @Sendable () -> Void,
                             onWaitingForKey: @escaping @Sendable () -> Void = {}) -> PadProbe {
        let box = Unmanaged.passRetained(PauseGateBox(flag, keyFrames: keyFrames, onDrop: onDrop, onWaitingForKey: onWaitingForKey)).toOpaque()
        let id = gst_pad_add_probe(pointer, GST_PAD_PROBE_TYPE_BUFFER, { _, info, data in
            guard let info, let data, let buffer = sfb_probe_info_buffer(info) else { return GST_PAD_PROBE_OK }
            let gate = Unmanaged<PauseGateBox>.fromOpaque(data).takeUnretainedValue()
            if gate.flag.isPaused {
                if gate.keyFrames { gate.needKey.store(true, ordering: .relaxed) }
                gate.onDrop()
                return GST_PAD_PROBE_DROP
            }
            guard gate.keyFrames, gate.needKey.load(ordering: .relaxed) else { return GST_PAD_PROBE_OK }
            if buffer.pointee.mini_object.flags & GST_BUFFER_FLAG_DELTA_UNIT.rawValue != 0 {
                gate.onWaitingForKey()
                gate.onDrop()
                return GST_PAD_PROBE_DROP
            }
            gate.needKey.store(false, ordering: .relaxed)
            return GST_PAD_PROBE_OK
        }, box, { data in
            if let data { Unmanaged<PauseGateBox>.fromOpaque(data).release() }
        })
        return PadProbe(pad: self, id: id)
    }
}
