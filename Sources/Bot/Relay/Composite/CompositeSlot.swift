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
    /// The composite pipeline's base time (its running time's zero on the clock) and running
    /// time now: a frame's clock time becomes a time on the composite's own timeline.
    private let baseTime: @Sendable () -> UInt64
    private let runningTime: @Sendable () -> UInt64?
    /// How much later than its capture time a frame of this participant goes on the composite's
    /// timeline (ns): the longest delay seen so far (the receiving jitter buffer's 200 ms and
    /// whatever the path added). One for audio and video, so they stay as in sync as they were
    /// sent. It only grows: a frame later than that moves the participant on (a small jump: a
    /// held picture, a little silence; nothing dropped), an earlier one waits in its queue.
    /// Signed: rtpbin's lip sync may stamp a frame ahead of when it leaves (its `ts-offset`).
    /// With it, where their audio ends on that timeline as the mixer lays it (ns).
    private let timeline = Locked(Timeline())

    private struct Timeline {
        var delay: Int64?
        var audioEnd: Int64?
    }

    /// A decoding branch and the mixer pad it feeds; `probes` live as long as the slot.
    struct Branch: Sendable {
        let bin: Bin
        let source: AppSource
        let pad: Pad
        let probes: [PadProbe]
    }

    init(number: Int, participant: String, display: String, audio: Branch, video: Branch?, baseTime: @escaping @Sendable () -> UInt64,
         runningTime: @escaping @Sendable () -> UInt64?, opened: @escaping @Sendable () -> Void) {
        (self.baseTime, self.runningTime) = (baseTime, runningTime)
        self.number = number
        self.participant = participant
        self.display = display
        self.audio = audio
        self.video = video
        self.opened = opened
    }

    var wantsClockTime: Bool { true }

    func pushAudio(_ frame: UnsafeRawBufferPointer) { pushAudio(frame, clockTime: nil) }

    func pushVideo(_ au: UnsafeRawBufferPointer, isKey: Bool) -> RelayGraph.PushResult { pushVideo(au, isKey: isKey, clockTime: nil) }

    func pushAudio(_ frame: UnsafeRawBufferPointer, clockTime: UInt64?) {
        opened()
        guard let pts = timestamp(clockTime, audio: Self.opusDuration(frame)) else { return }
        // A full queue drops its oldest (the mixer is live).
        audio.source.push(frame, pts: pts)
    }

    @discardableResult
    func pushVideo(_ au: UnsafeRawBufferPointer, isKey: Bool, clockTime: UInt64?) -> RelayGraph.PushResult {
        opened()
        guard let video else { return .refused }
        if !videoStarted.load(ordering: .acquiring) {
            guard isKey else { return .waitingForKeyFrame }
            videoStarted.store(true, ordering: .releasing)
        }
        guard let pts = timestamp(clockTime) else { return .refused }
        return video.source.push(au, pts: pts, delta: !isKey) ? .sent : .refused
    }

    /// Where a frame goes on the composite's timeline: its capture time as the receiving side
    /// put it (lip-synced by RTCP) plus the participant's `delay`, so jitter or a burst after a
    /// stall does not move it, nor its other track; without one, its arrival. A participant's
    /// frames keep their spacing, so the mixer sees no discontinuity that was not in the call.
    /// An audio frame (`audio`: its duration) that would overlap their audio before it by the
    /// mixer's alignment threshold or more goes right after it, and the delay grows by as much,
    /// so their video follows: the receiving jitter buffer's output time never goes back, and
    /// where its estimate of the sender's clock steps back (seen after stalls of the receiving
    /// side) the frames come with one and the same capture time until it has caught up, and the
    /// mixer dropped all but two of them as late. A little later, but whole and in sync.
    private func timestamp(_ clockTime: UInt64?, audio duration: Int64? = nil) -> UInt64? {
        guard let now = runningTime() else { return nil }
        let base = Int64(baseTime()), arrival = Int64(now) + base, captured = Int64(clockTime ?? UInt64(arrival))
        let pts: Int64 = timeline.withLock { t in
            var late = max(t.delay ?? .min, arrival - captured)
            var pts = captured + late - base
            if let duration {
                if let end = t.audioEnd, pts <= end - Self.alignment {
                    late += end - pts
                    pts = end
                }
                // The mixer lays a frame within its threshold of where the last ended right after it.
                t.audioEnd = t.audioEnd.map { abs(pts - $0) < Self.alignment ? $0 + duration : pts + duration } ?? pts + duration
            }
            t.delay = late
            return pts
        }
        return pts >= 0 ? UInt64(pts) : now
    }

    /// audiomixer's `alignment-threshold` (its default, relay-composite.pipeline), ns.
    static let alignment: Int64 = 40_000_000

    /// Their media comes on a new PeerConnection (a new feed): its video is decoded from its
    /// first keyframe on. The picture shown meanwhile is their last.
    func restartVideo() { videoStarted.store(false, ordering: .releasing) }
}

extension CompositeSlot {
    /// How long an Opus packet plays (ns), from its TOC byte and frame count (RFC 6716 §3.1);
    /// nil if it is too short to say.
    static func opusDuration(_ packet: UnsafeRawBufferPointer) -> Int64? {
        guard let toc = packet.first else { return nil }
        let config = Int(toc >> 3)
        // SILK 10/20/40/60 ms, hybrid 10/20 ms, CELT 2.5/5/10/20 ms, in units of 2.5 ms.
        let units = config < 12 ? [4, 8, 16, 24][config & 3] : config < 16 ? [4, 8][config & 1] : [1, 2, 4, 8][config & 3]
        let frames: Int
        switch toc & 3 {
        case 0: frames = 1
        case 1, 2: frames = 2
        default:
            guard packet.count > 1, packet[1] & 0x3F > 0 else { return nil }
            frames = Int(packet[1] & 0x3F)
        }
        return Int64(units * frames) * 2_500_000
    }
}
