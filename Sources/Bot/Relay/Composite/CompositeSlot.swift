import GStreamerKit
import Locking
import Synchronization

/// One participant's place in the composite: the two branches of `CompositeMixer`'s pipeline
/// that decode their opened media (relay-composite-audio, relay-composite-video) and the mixer
/// pads they feed. Their `RelayInput` pushes here, on its streaming threads, only what opened.
final class CompositeSlot: RelayFrameSink {
    let number: Int
    let participant: String
    /// Their display name, for the log.
    let display: String
    let keyFrames = Locked<KeyFrameRequests?>(nil)
    let audio: Branch
    let video: Branch?
    /// The first frame that opened in any slot starts the output (nothing is sent before).
    private let opened: @Sendable () -> Void
    /// Video is decoded from a keyframe on: a decoder given a P-frame first shows garbage.
    private let videoStarted = Atomic<Bool>(false)
    /// The composite pipeline's running time now, and where the audio goes on it.
    private let runningTime: @Sendable () -> UInt64?
    private let timeline = Locked(SlotTimeline())

    /// A decoding branch and the mixer pad it feeds; `probes` live as long as the slot.
    struct Branch: Sendable {
        let bin: Bin
        let source: AppSource
        let pad: Pad
        let probes: [PadProbe]
    }

    init(number: Int, participant: String, display: String, audio: Branch, video: Branch?, runningTime: @escaping @Sendable () -> UInt64?,
         opened: @escaping @Sendable () -> Void) {
        self.runningTime = runningTime
        self.number = number
        self.participant = participant
        self.display = display
        self.audio = audio
        self.video = video
        self.opened = opened
    }

    func pushAudio(_ frame: UnsafeRawBufferPointer) {
        opened()
        guard let now = runningTime() else { return }
        let pts = timeline.withLock { $0.place(arrival: now, duration: SlotTimeline.opusDuration(frame)) }
        // A full queue drops its oldest (the mixer is live).
        audio.source.push(frame, pts: pts)
    }

    @discardableResult
    func pushVideo(_ au: UnsafeRawBufferPointer, isKey: Bool) -> RelayGraph.PushResult {
        opened()
        guard let video else { return .refused }
        if !videoStarted.load(ordering: .acquiring) {
            guard isKey else { return .waitingForKeyFrame }
            videoStarted.store(true, ordering: .releasing)
        }
        return video.source.push(au, pts: UInt64.max, delta: !isKey) ? .sent : .refused
    }

    /// Their media comes on a new PeerConnection (a new feed): its video is decoded from its
    /// first keyframe on. The picture shown meanwhile is their last.
    func restartVideo() { videoStarted.store(false, ordering: .releasing) }
}
