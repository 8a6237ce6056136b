public import FrameCrypto

/// The traffic the receive limit receives and the send limit sends: what `scripts/bench-record`'s publishers send at the
/// `phone` preset, per publisher and second:
/// - Opus audio: 50 packets, each one ECall audio frame of 100-160 bytes sealed (71-131 plain);
/// - H.264 at 600 kbit/s and 15 fps: 15 access units of one slice, 4000-6000 bytes plain
///   (5000 on average = 600 kbit/s / 15), sealed as ECall video frames and cut into RTP
///   payloads of at most 1188 bytes (≤ 1210 bytes on the wire with the RTP header and the
///   SRTP tag), the marker on the last: about 4.7 packets a frame, 70 a second.
/// So about 120 packets a second, 58 % of them video. The cuts are plain, not FU-A: a
/// receiver's depacketizing is the copy into the frame, which this one does too.
public struct TrafficMix: Sendable {
    public static let audioPerSecond = 50
    public static let videoFramesPerSecond = 15
    public static let maxPayload = 1188
    public static let audioPayloadType: UInt8 = 111
    public static let videoPayloadType: UInt8 = 96

    /// One second of one publisher's sealed frames; every publisher sends the same bytes.
    public let audio: [[UInt8]]
    public let video: [[UInt8]]
    /// The same frames before sealing (the send limit seals them as it sends).
    public let plainAudio: [[UInt8]]
    public let plainVideo: [[UInt8]]
    /// When each frame of one second is sent, by publisher: (seconds, publisher, video?, frame index).
    let events: [(at: Double, publisher: Int, video: Bool, frame: Int)]
    public let publishers: Int
    public let inStep: Bool

    /// `inStep`: every publisher's frames at the same instants, as `sfubot load`'s publishers send
    /// them (one shared encoder); otherwise spread over 20 ms, as publishers joining one after
    /// another send them.
    public init(publishers: Int, key: CallKey, inStep: Bool = false) throws(FrameError) {
        (self.publishers, self.inStep) = (publishers, inStep)
        var audio: [[UInt8]] = [], plainAudio: [[UInt8]] = [], plainVideo: [[UInt8]] = []
        for i in 0..<Self.audioPerSecond {
            let plain = [UInt8](repeating: UInt8(truncatingIfNeeded: i), count: 71 + (i * 13) % 61)
            var sealed = [UInt8](repeating: 0, count: plain.count + AudioFrame.overhead)
            let n = plain.withUnsafeBytes { p in sealed.withUnsafeMutableBytes { o in try? AudioFrame.seal(p, key: key, into: o) } }
            guard let n else { throw .sealFailed }
            audio.append(Array(sealed[..<n]))
            plainAudio.append(plain)
        }
        var video: [[UInt8]] = []
        for i in 0..<Self.videoFramesPerSecond {
            let size = 4000 + (i * 2000) / (Self.videoFramesPerSecond - 1)
            // A length-prefixed access unit of one slice: IDR first, then non-IDR.
            var au: [UInt8] = [UInt8(size >> 24), UInt8(size >> 16 & 0xFF), UInt8(size >> 8 & 0xFF), UInt8(size & 0xFF)]
            au.append(i == 0 ? 0x65 : 0x41)
            au.append(0x88)
            for j in 2..<size { au.append(UInt8(truncatingIfNeeded: j &* 31 &+ i)) }
            var sealed = [UInt8](repeating: 0, count: au.count + VideoFrame.sliceOverhead)
            let n = au.withUnsafeBytes { a in sealed.withUnsafeMutableBytes { o in try? VideoFrame.seal(a, key: key, into: o) } }
            guard let n else { throw .sealFailed }
            video.append(Array(sealed[..<n]))
            plainVideo.append(au)
        }
        self.audio = audio
        self.video = video
        (self.plainAudio, self.plainVideo) = (plainAudio, plainVideo)
        // Publishers start at spread phases, as bots joining one after another do (unless inStep).
        var events: [(at: Double, publisher: Int, video: Bool, frame: Int)] = []
        for p in 0..<publishers {
            let phase = inStep ? 0 : Double(p) / Double(max(publishers, 1)) * 0.02
            for i in 0..<Self.audioPerSecond { events.append((phase + Double(i) / Double(Self.audioPerSecond), p, false, i)) }
            for i in 0..<Self.videoFramesPerSecond { events.append((phase + Double(i) / Double(Self.videoFramesPerSecond), p, true, i)) }
        }
        self.events = events.sorted { $0.at < $1.at }
    }

    /// RTP packets one publisher sends a second, and how many of them are video.
    public var packetsPerPublisherSecond: (all: Int, video: Int) {
        let v = video.reduce(0) { $0 + ($1.count + Self.maxPayload - 1) / Self.maxPayload }
        return (Self.audioPerSecond + v, v)
    }

    /// A line saying what the mix is.
    public var description: String {
        let (all, v) = packetsPerPublisherSecond
        let bytes = audio.reduce(0) { $0 + $1.count } + video.reduce(0) { $0 + $1.count }
        return "\(publishers) A/V publishers at the phone preset: per publisher and second \(Self.audioPerSecond) audio packets "
            + "(sealed Opus frames of \(audio.map(\.count).min() ?? 0)-\(audio.map(\.count).max() ?? 0) B) and \(v) video packets "
            + "(\(Self.videoFramesPerSecond) sealed H.264 frames, ≤ \(Self.maxPayload) B payloads), \(all) packets, "
            + "\(bytes * 8 / 1000) kbit/s of payload; \(all * publishers) packets/s in all; "
            + (inStep ? "the publishers' frames in step" : "the publishers' frames spread over 20 ms")
    }
}
