import Bot
import FastPath
import FrameCrypto
import Foundation
import GStreamerKit
import Synchronization
import Locking

extension SubscriberBot {
    final class Streams: Sendable {
        private let map = Locked<[String: Stream]>([:])
        /// This bot decodes its video (`--decode-every`): the branch ends in a decoder.
        let decodes: Bool
        init(decodes: Bool) { self.decodes = decodes }
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

        /// Does this access unit (4-byte length-prefixed NAL units) hold an IDR slice (type 5)?
        static func holdsIDR(_ au: UnsafeRawBufferPointer) -> Bool {
            var at = 0
            while at + 5 <= au.count {
                let size = au[at..<at + 4].reduce(0) { $0 << 8 | Int($1) }
                if au[at + 4] & 0x1f == 5 { return true }
                at += 4 + size
            }
            return false
        }

        func open(_ stream: Stream, _ protection: FrameProtection) {
            let consumer: ((any FrameTransform) -> PadProbe)? = consumingRTP ? { [pad] t in pad.addRTPPayloadConsumer(t) } : nil
            stream.probe = stream.kind == "video"
                ? pad.attachReceiver(protection, VideoFormat.self, stats: stream.stats, times: stream.times, display: stream.display,
                                     feedID: stream.feedID, attach: consumer)
                : pad.attachReceiver(protection, AudioFormat.self, stats: stream.stats, times: stream.times, display: stream.display,
                                     feedID: stream.feedID, attach: consumer)
            stream.branch = bin
            // A picture: the first opened access unit holding an IDR slice (NAL headers stay clear).
            if stream.kind == "video" {
                stream.keyframeProbe = pad.addBufferObserver { [weak stream] bytes in
                    guard let stream, stream.firstKeyframe.firstDate == nil, Self.holdsIDR(bytes) else { return }
                    stream.firstKeyframe.mark()
                }
            }
            // A decoding branch: count its pictures and their size (the shared encoder's).
            if let sink = try? bin.element(named: "pictures").staticPad("sink") {
                stream.pictureProbe = sink.addBufferObserver { [weak stream, sink] _ in
                    guard let stream else { return }
                    if stream.pictures.add(1, ordering: .relaxed).newValue == 1 { stream.pictureCaps.withLock { $0 = sink.caps } }
                }
            }
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
        var pictureProbe: PadProbe?
        var keyframeProbe: PadProbe?
        /// When the first keyframe (IDR) opened: the subscriber's first picture of this feed.
        let firstKeyframe = FrameTimes()
        /// Pictures decoded (`--decode-every`) and the caps of the first.
        let pictures = Atomic<Int>(0)
        let pictureCaps = Locked<String?>(nil)
        /// The publisher's Janus display: with per-sender keys its participant id names its keys.
        let display: String
        func removeProbes() {
            probe?.remove()
            pictureProbe?.remove()
            keyframeProbe?.remove()
        }

        init(mid: String, feedID: Int64, kind: String, display: String = "") {
            self.mid = mid
            self.feedID = feedID
            self.kind = kind
            self.display = display
        }
    }
}

extension SubscriberBot {
    /// Video access units received and decrypted on the current streams.
    var videoFrames: FrameStats.Snapshot {
        streams.withLock { m in m.values.filter { $0.kind == "video" }.reduce(FrameStats.Snapshot.zero) { $0 + $1.stats.snapshot } }
    }

    /// Seconds from the attempt's start until every current video feed had opened a keyframe
    /// (a first picture of each); nil before that, or without video.
    var firstKeyframeSeconds: Double? {
        guard let start = core.current?.clock.start else { return nil }
        let firsts = streams.withLock { m in m.values.filter { $0.kind == "video" }.map { $0.firstKeyframe.firstDate } }
        guard !firsts.contains(where: { $0 == nil }), let last = firsts.compactMap({ $0 }).max() else { return nil }
        return last.timeIntervalSince(start)
    }

    /// Pictures decoded on the current streams and the sizes they had (`--decode-every`); nil
    /// if this bot does not decode.
    var videoPictures: (decoded: Int, sizes: [String])? {
        guard streams.decodes else { return nil }
        return streams.withLock { m in
            let video = m.values.filter { $0.kind == "video" }
            let sizes = Set(video.compactMap { s in s.pictureCaps.withLock { $0 }.flatMap(Self.size(in:)) })
            return (video.reduce(0) { $0 + $1.pictures.load(ordering: .relaxed) }, sizes.sorted())
        }
    }

    /// "WxH" from raw video caps.
    static func size(in caps: String) -> String? {
        func value(_ key: String) -> String? {
            guard let r = caps.range(of: key + "=(int)") else { return nil }
            return String(caps[r.upperBound...].prefix { $0.isNumber })
        }
        guard let w = value("width"), let h = value("height") else { return nil }
        return "\(w)x\(h)"
    }
}
