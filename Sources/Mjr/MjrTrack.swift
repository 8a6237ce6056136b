public import FrameCrypto
import Foundation

/// One `.mjr` file opened: its frames decrypted, on a timeline in nanoseconds. Frames no key
/// opens, and video frames whose packets were lost, are dropped and counted, never kept.
public struct MjrTrack: Sendable {
    public struct Frame: Sendable {
        /// Nanoseconds from the earliest track of the output it goes into.
        public var pts: UInt64
        /// Plaintext bytes in `bytes`: an Opus frame, or an H.264 access unit in Annex-B.
        public var range: Range<Int>
        public var keyframe: Bool
    }

    public let file: MjrFile
    public private(set) var frames: [Frame] = []
    public private(set) var bytes: [UInt8] = []
    public let stats = FrameStats()
    /// RTP packets missing from the file (sequence gaps) and ones whose header did not parse.
    public private(set) var lostPackets = 0
    public private(set) var malformedPackets = 0
    /// Packets whose sequence number or timestamp did not fit those around them (damage): dropped.
    public private(set) var outOfLinePackets = 0
    /// Video: opened access units before the first keyframe, left out (nothing can decode them).
    public private(set) var beforeFirstKeyframe = 0
    public private(set) var keyframes = 0

    /// Opens every frame of `file` with the keys `keys` gives for (`sender`, frame time).
    /// `offset` (ns) shifts the timeline so tracks of one publisher line up.
    public init(file: MjrFile, keys: any MjrKeySource, sender: String?, offset: UInt64 = 0) {
        self.file = file
        let rtp = MjrRTP(file)
        lostPackets = rtp.lost
        malformedPackets = rtp.malformed
        outOfLinePackets = rtp.outOfLine
        guard let t0 = rtp.packets.first?.timestamp else { return }
        let clock: Int64 = file.kind == .audio ? 48_000 : 90_000
        let start = file.firstPacket
        // Frames before the first one (reordered) would be negative; none precede t0 after sorting by seq,
        // but timestamps may step back: such frames are clamped to 0.
        func pts(_ ts: Int64) -> UInt64 { offset + UInt64(max(0, ts - t0)) * 1_000_000_000 / UInt64(clock) }
        func time(_ ts: Int64) -> Date { start.addingTimeInterval(Double(ts - t0) / Double(clock)) }
        bytes.reserveCapacity(file.data.count)
        file.data.withUnsafeBytes { (b: UnsafeRawBufferPointer) in
            switch file.kind {
            case .audio: openAudio(b, rtp.packets, keys: keys, sender: sender, pts: pts, time: time)
            case .video: openVideo(b, rtp.packets, keys: keys, sender: sender, pts: pts, time: time)
            }
        }
    }

    /// Seconds of the first and last frame kept, on the output's timeline.
    public var firstMediaTime: Double? { frames.first.map { Double($0.pts) / 1e9 } }
    public var lastMediaTime: Double? { frames.last.map { Double($0.pts) / 1e9 } }

    private mutating func openAudio(_ b: UnsafeRawBufferPointer, _ packets: [MjrRTP.Packet], keys: any MjrKeySource, sender: String?,
                                    pts: (Int64) -> UInt64, time: (Int64) -> Date) {
        var out = [UInt8](repeating: 0, count: 1 << 16)  // an RTP payload never exceeds 64 KiB
        for p in packets where !p.payload.isEmpty {
            stats.received()
            let frame = UnsafeRawBufferPointer(rebasing: b[p.payload])
            let opened = out.withUnsafeMutableBytes { (o) -> Result<Int, DropReason> in
                do throws(DropReason) {
                    return .success(try keys.open(frame, kind: .audio, sender: sender, at: time(p.timestamp), into: o))
                } catch { return .failure(error) }
            }
            switch opened {
            case .success(let n):
                stats.opened()
                frames.append(Frame(pts: pts(p.timestamp), range: bytes.count..<(bytes.count + n), keyframe: true))
                bytes.append(contentsOf: out[0..<n])
            case .failure(let reason):
                stats.dropped(reason)
            }
        }
    }

    private mutating func openVideo(_ b: UnsafeRawBufferPointer, _ packets: [MjrRTP.Packet], keys: any MjrKeySource, sender: String?,
                                    pts: (Int64) -> UInt64, time: (Int64) -> Date) {
        var au = H264Depacketizer()
        var out = [UInt8](repeating: 0, count: 1 << 16)
        var i = 0
        while i < packets.count {
            // One access unit: the packets that share a timestamp.
            var j = i + 1
            while j < packets.count, packets[j].timestamp == packets[i].timestamp { j += 1 }
            stats.received()
            let gapBefore = i > 0 && packets[i].seq != packets[i - 1].seq + 1
            let whole = !gapBefore && packets[j - 1].marker && packets[i..<j].indices.dropFirst().allSatisfy { packets[$0].seq == packets[$0 - 1].seq + 1 }
            let ts = packets[i].timestamp
            let built = whole && au.build(packets[i..<j].lazy.map { UnsafeRawBufferPointer(rebasing: b[$0.payload]) })
            i = j
            guard built else { stats.dropped(.malformed); continue }
            // Twice the access unit: an Annex-B opener may write back longer start codes.
            if out.count < 2 * au.bytes.count { out = [UInt8](repeating: 0, count: au.bytes.count * 2) }
            let opened = au.bytes.withUnsafeBytes { a in
                out.withUnsafeMutableBytes { (o) -> Result<Int, DropReason> in
                    do throws(DropReason) {
                        return .success(try keys.open(a, kind: .video, sender: sender, at: time(ts), into: o))
                    } catch { return .failure(error) }
                }
            }
            switch opened {
            case .success(let n):
                stats.opened()
                let key = out.withUnsafeBytes { VideoFrame.containsIDR(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
                if key { keyframes += 1 }
                guard key || keyframes > 0 else { beforeFirstKeyframe += 1; continue }
                let startIndex = bytes.count
                H264Depacketizer.appendAnnexB(out[0..<n], to: &bytes)
                frames.append(Frame(pts: pts(ts), range: startIndex..<bytes.count, keyframe: key))
            case .failure(let reason):
                stats.dropped(reason)
            }
        }
    }
}
