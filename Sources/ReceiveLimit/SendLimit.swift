#if canImport(Glibc)
import Glibc
#endif
import CReceiveLimit
import Foundation
public import FrameCrypto
import Locking
import Synchronization

/// The send limit (issue 42): the least CPU sending one SRTP packet of our media can take on
/// this machine. The measured thread sends a `TrafficMix` of N publishers over UDP on
/// 127.0.0.1 doing only what a publisher must: seal every frame in ECall's format (AES-GCM,
/// FrameCrypto, a fresh nonce per publisher and frame), cut it into RTP packets, protect each
/// with its publisher's own libsrtp session, sendmmsg. Its CPU time (CLOCK_THREAD_CPUTIME_ID)
/// over the packets sent is the limit. A sink thread (not measured) unprotects and opens what
/// arrives, so a run that sent nothing, or anything in clear, shows as failures.
///
/// What sfubot's publishers do beyond it is the comparison: one socket per PeerConnection,
/// GStreamer's payloader and buffers, the encoder, RTCP. The limit shares one socket among its
/// publishers (one local candidate for all PeerConnections would allow that) and batches their
/// packets into one sendmmsg, at most 64 or whatever is due before it sleeps.
public enum SendLimit {
    public struct Plan: Sendable {
        public var mix: TrafficMix
        /// Packets to send (the sender ends at the first frame boundary past it).
        public var packets: Int
        /// 1 sends at the mix's real rate; 10 ten times as fast; `.infinity` as fast as it can.
        public var speed: Double
        /// The key the sender seals every frame with; the sink opens with `openKey`.
        public var sealKey: CallKey
        public var openKey: CallKey
        /// Where the sink writes the frames it opened (truncated; /dev/null is fine).
        public var file: String
        public init(mix: TrafficMix, packets: Int, speed: Double = 1, sealKey: CallKey, openKey: CallKey, file: String) {
            (self.mix, self.packets, self.speed, self.sealKey, self.openKey, self.file) = (mix, packets, speed, sealKey, openKey, file)
        }
    }

    public struct Report: Sendable {
        public var packetsSent = 0, framesSent = 0
        /// Plaintext bytes of the frames sent: what the sink writes when every frame opens.
        public var plainBytesSent = 0
        /// Frames that did not seal and packets libsrtp refused: neither is sent.
        public var sealFailures = 0, protectFailures = 0
        /// The sending thread's CPU seconds, from its first frame to its last sendmmsg.
        public var senderCPUSeconds = 0.0
        /// The part of it in the kernel (the UDP send, on 127.0.0.1 the delivery to the sink too; sleeps and wake-ups).
        public var senderKernelSeconds = 0.0
        /// libsrtp sessions, one per publisher.
        public var sessions = 0
        public var srtpLibrary = ""
        /// What the sink on 127.0.0.1 read, unprotected and opened (its CPU is not the measure).
        public var sink = ReceiveLimit.Report()
        public var microsecondsPerPacket: Double { packetsSent > 0 ? senderCPUSeconds * 1e6 / Double(packetsSent) : 0 }
        public var kernelMicrosecondsPerPacket: Double { packetsSent > 0 ? senderKernelSeconds * 1e6 / Double(packetsSent) : 0 }
    }

    /// Runs the plan: blocks the calling thread (it is the sender) until it has sent and the
    /// sink has read what arrived. Call it off Swift's cooperative pool (OffPool.run).
    public static func measure(_ plan: Plan) throws(ReceiveLimit.Failure) -> Report {
        var why: UnsafePointer<CChar>? = nil
        guard let library = sfb_limit_srtp_library(&why) else { throw .init(description: String(cString: why!)) }
        // One SRTP master key for all: the sink unprotects every publisher with one session.
        // The publishers' keystreams still differ (the SSRC is in libsrtp's IV).
        var srtpKey = [UInt8](repeating: 0, count: Int(SFB_LIMIT_KEY_LENGTH))
        for i in srtpKey.indices { srtpKey[i] = UInt8.random(in: 0...255) }
        guard let inbound = sfb_limit_srtp_new(srtpKey, 1, &why) else { throw .init(description: String(cString: why!)) }
        defer { sfb_limit_srtp_free(inbound) }
        var outbound: [OpaquePointer] = []
        defer { for s in outbound { sfb_limit_srtp_free(s) } }
        for _ in 0..<plan.mix.publishers {
            guard let s = sfb_limit_srtp_new(srtpKey, 0, &why) else { throw .init(description: String(cString: why!)) }
            outbound.append(s)
        }
        var port: UInt16 = 0
        let rfd = sfb_limit_receiver_socket(8 << 20, 200, &port)
        guard rfd >= 0 else { throw .init(description: "no UDP socket on 127.0.0.1: \(String(cString: strerror(errno)))") }
        defer { close(rfd) }
        let sfd = sfb_limit_sender_socket(port)
        guard sfd >= 0 else { throw .init(description: "cannot connect a UDP socket to 127.0.0.1:\(port)") }
        defer { close(sfd) }
        let out = open(plan.file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard out >= 0 else { throw .init(description: "cannot write \(plan.file): \(String(cString: strerror(errno)))") }
        defer { close(out) }

        let sent = Locked<Sender.Sent?>(nil)
        let sunk = Locked<ReceiveLimit.Report?>(nil)
        let sinkSession = UnsafeSendable(inbound)
        let keys = KeyRing.Candidates(current: plan.openKey)
        let sink = Thread {
            var r = ReceiveLimit.Report()
            ReceiveLimit.receiveAll(fd: rfd, session: sinkSession.value, keys: keys, file: out, sent: sent, report: &r)
            sunk.withLock { $0 = r }
        }
        sink.start()

        let sender = Sender(mix: plan.mix, packets: plan.packets, speed: plan.speed, fd: sfd,
                            sessions: outbound.map { UnsafeSendable($0) }, sealKey: plan.sealKey)
        let cpu0 = ReceiveLimit.threadCPUSeconds(), kernel0 = sfb_limit_thread_kernel_seconds()
        let s = sender.run()
        let cpu1 = ReceiveLimit.threadCPUSeconds(), kernel1 = sfb_limit_thread_kernel_seconds()
        sent.withLock { $0 = s }
        // The sink ends once it has read every packet, or 200 ms after the last one came.
        while sunk.withLock({ $0 == nil }) { usleep(1000) }

        var report = Report()
        report.srtpLibrary = String(cString: library)
        report.sessions = outbound.count
        report.packetsSent = s.packets
        report.framesSent = s.frames
        report.plainBytesSent = s.plainBytes
        report.sealFailures = s.sealFailures
        report.protectFailures = s.protectFailures
        report.senderCPUSeconds = cpu1 - cpu0
        report.senderKernelSeconds = kernel1 - kernel0
        report.sink = sunk.withLock { $0 }!
        report.sink.packetsSent = s.packets
        report.sink.framesSent = s.frames
        return report
    }
}
