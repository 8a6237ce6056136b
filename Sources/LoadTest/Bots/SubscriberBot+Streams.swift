import Bot
import FastPath
import FrameCrypto
import GStreamerKit
import Synchronization
import Locking

extension SubscriberBot {
    final class Streams: Sendable {
        private let map = Locked<[String: Stream]>([:])
        func withLock<R>(_ body: (inout [String: Stream]) -> R) -> R { map.withLock { body(&$0) } }
        /// Receive branches by mid, kept when their stream ends: webrtcbin adds a pad once per
        /// mid, so a feed Janus later puts on the same mid reuses the branch (set under `map`'s lock).
        nonisolated(unsafe) var branches: [String: Branch] = [:]
    }

    /// Where a mid's frames are opened: its receive branch, and the pad the opener goes on
    /// (the depayloader's output, or webrtcbin's own pad when each RTP packet's payload is
    /// opened and dropped there).
    struct Branch: @unchecked Sendable {
        // @unchecked: GStreamer objects are thread-safe references.
        let bin: Bin
        let pad: Pad
        let consumingRTP: Bool

        func open(_ stream: Stream, _ protection: FrameProtection) {
            let consumer: ((any FrameTransform) -> PadProbe)? = consumingRTP ? { [pad] t in pad.addRTPPayloadConsumer(t) } : nil
            stream.probe = stream.kind == "video"
                ? pad.attachReceiver(protection, VideoFormat.self, stats: stream.stats, times: stream.times, display: stream.display,
                                     feedID: stream.feedID, attach: consumer)
                : pad.attachReceiver(protection, AudioFormat.self, stats: stream.stats, times: stream.times, display: stream.display,
                                     feedID: stream.feedID, attach: consumer)
            stream.branch = bin
        }
    }

    /// One subscribed stream: which feed, and what came of its frames.
    final class Stream: @unchecked Sendable {
        // @unchecked: set before webrtcbin adds the pad; `branch`/`probe`/`ssrc` under `streams`' lock.
        let mid: String
        let feedID: Int64
        let kind: String
        let stats = FrameStats()
        let times = FrameTimes()
        var ssrc: UInt32?
        var branch: Bin?
        var probe: PadProbe?
        /// The publisher's Janus display: with per-sender keys its participant id names its keys.
        let display: String
        init(mid: String, feedID: Int64, kind: String, display: String = "") {
            self.mid = mid
            self.feedID = feedID
            self.kind = kind
            self.display = display
        }
    }
}
