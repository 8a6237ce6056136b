#if canImport(Glibc)
import Glibc
#endif
import CReceiveLimit
import Foundation
import FrameCrypto

/// A sending thread: the mix's packets, SRTP-protected as they go, paced by the clock and sent
/// with sendmmsg. For the receive limit it sends the mix's frames sealed once in advance and
/// its CPU is not measured; for the send limit (`sealKey`) it seals every frame as it sends it,
/// protects each publisher's packets with that publisher's own session (one per PeerConnection,
/// as sfubot's senders), and its CPU is the measure.
final class Sender: Sendable {
    let mix: TrafficMix
    let packets: Int
    let speed: Double
    let fd: Int32
    /// One session for every publisher, or one per publisher (publisher p uses sessions[p % count]).
    let sessions: [UnsafeSendable<OpaquePointer>]
    let sealKey: CallKey?

    struct Sent { var packets = 0, frames = 0, plainBytes = 0, sealFailures = 0, protectFailures = 0 }

    init(mix: TrafficMix, packets: Int, speed: Double, fd: Int32, sessions: [UnsafeSendable<OpaquePointer>], sealKey: CallKey? = nil) {
        (self.mix, self.packets, self.speed, self.fd, self.sessions, self.sealKey) = (mix, packets, speed, fd, sessions, sealKey)
    }

    /// Sends until `packets` are sent, ending on a frame boundary; what was sent.
    func run() -> Sent {
        let slot = Int(SFB_LIMIT_SLOT), batch = Int(SFB_LIMIT_BATCH)
        let buffers = UnsafeMutableRawBufferPointer.allocate(byteCount: batch * slot, alignment: 16)
        defer { buffers.deallocate() }
        var pointers: [UnsafeMutablePointer<UInt8>?] = (0..<batch).map { buffers.baseAddress!.advanced(by: $0 * slot).assumingMemoryBound(to: UInt8.self) }
        var lengths = [Int32](repeating: 0, count: batch)
        var queued = 0, out = Sent()
        // Room for the largest frame sealed (the send limit seals into it).
        let sealedRoom = (mix.plainVideo + mix.plainAudio).map(\.count).max()! + VideoFrame.sliceOverhead + AudioFrame.overhead
        let sealed = UnsafeMutableRawBufferPointer.allocate(byteCount: sealedRoom, alignment: 16)
        defer { sealed.deallocate() }
        // Per publisher: audio and video sequence numbers (SSRCs 2p+1 and 2p+2).
        var seq = [UInt16](repeating: 0, count: 2 * mix.publishers)
        let start = ContinuousClock.now
        func flush() {
            guard queued > 0 else { return }
            let r = sfb_limit_send(fd, &pointers, &lengths, Int32(queued))
            if r > 0 { out.packets += Int(r) }
            queued = 0
        }
        var second = 0
        outer: while true {
            for e in mix.events {
                // Pacing: wait until the event is due (none with an infinite speed).
                let due = (Double(second) + e.at) / speed
                if due.isFinite {
                    let now = ContinuousClock.now - start
                    let (s, atto) = now.components
                    let elapsed = Double(s) + Double(atto) / 1e18
                    if due > elapsed {
                        flush()
                        usleep(UInt32(min(100_000, (due - elapsed) * 1e6)))
                    }
                }
                let stream = 2 * e.publisher + (e.video ? 1 : 0)
                let session = sessions[e.publisher % sessions.count].value
                let rate = e.video ? 90_000.0 : 48_000.0
                let timestamp = UInt32(truncatingIfNeeded: Int((Double(second) + e.at) * rate))
                // Cut into RTP packets, each protected and queued.
                func packetize(_ frame: UnsafeRawBufferPointer) {
                    var at = 0
                    while at < frame.count {
                        let n = min(TrafficMix.maxPayload, frame.count - at)
                        let p = pointers[queued]!
                        let last = at + n == frame.count
                        header(p, marker: last, payloadType: e.video ? TrafficMix.videoPayloadType : TrafficMix.audioPayloadType,
                               seq: seq[stream], timestamp: timestamp, ssrc: UInt32(stream + 1))
                        seq[stream] &+= 1
                        (p + 12).update(from: frame.baseAddress!.assumingMemoryBound(to: UInt8.self) + at, count: n)
                        let protected = sfb_limit_protect(session, p, Int32(12 + n))
                        // A packet libsrtp refused is not sent (never in clear); the receiver counts the frame as lost.
                        if protected > 0 { lengths[queued] = protected; queued += 1 } else { out.protectFailures += 1 }
                        if queued == batch { flush() }
                        at += n
                    }
                }
                if let sealKey {
                    // The frame's ECall seal, fresh for every publisher and frame (its own nonce).
                    let plain = e.video ? mix.plainVideo[e.frame] : mix.plainAudio[e.frame]
                    let n = plain.withUnsafeBytes { p in
                        e.video ? try? VideoFrame.seal(p, key: sealKey, into: sealed) : try? AudioFrame.seal(p, key: sealKey, into: sealed)
                    }
                    // A frame that did not seal is not sent (never in clear).
                    guard let n else { out.sealFailures += 1; continue }
                    out.plainBytes += plain.count
                    packetize(UnsafeRawBufferPointer(rebasing: sealed[..<n]))
                } else {
                    (e.video ? mix.video[e.frame] : mix.audio[e.frame]).withUnsafeBytes { packetize($0) }
                }
                out.frames += 1
                if out.packets + queued >= packets { break outer }
            }
            second += 1
        }
        flush()
        return out
    }

    private func header(_ p: UnsafeMutablePointer<UInt8>, marker: Bool, payloadType: UInt8, seq: UInt16, timestamp: UInt32, ssrc: UInt32) {
        p[0] = 0x80
        p[1] = (marker ? 0x80 : 0) | payloadType
        p[2] = UInt8(seq >> 8); p[3] = UInt8(seq & 0xFF)
        p[4] = UInt8(timestamp >> 24); p[5] = UInt8(timestamp >> 16 & 0xFF); p[6] = UInt8(timestamp >> 8 & 0xFF); p[7] = UInt8(timestamp & 0xFF)
        p[8] = UInt8(ssrc >> 24); p[9] = UInt8(ssrc >> 16 & 0xFF); p[10] = UInt8(ssrc >> 8 & 0xFF); p[11] = UInt8(ssrc & 0xFF)
    }
}
