#if canImport(Glibc)
import Glibc
#endif
import CReceiveLimit
import Foundation
public import FrameCrypto
import Locking
import Synchronization

/// The receive limit (issue 42): the least CPU receiving one SRTP packet of our media and opening
/// its frame can take on this machine. One thread sends a `TrafficMix` over UDP on 127.0.0.1;
/// the receiving thread does only recvmmsg, libsrtp unprotect, the ECall frame open (AES-GCM,
/// FrameCrypto) and a buffered write() of the opened frames to a file. Its CPU time
/// (CLOCK_THREAD_CPUTIME_ID) over the packets it received is the limit.
public enum ReceiveLimit {
    public struct Plan: Sendable {
        public var mix: TrafficMix
        /// Packets to send (the sender ends at the first frame boundary past it).
        public var packets: Int
        /// 1 sends at the mix's real rate; 10 ten times as fast; `.infinity` as fast as it can.
        public var speed: Double
        /// The key frames are opened with (the mix's, or another to see every frame fail).
        public var openKey: CallKey
        /// Where the opened frames go (truncated).
        public var file: String
        public init(mix: TrafficMix, packets: Int, speed: Double = 1, openKey: CallKey, file: String) {
            (self.mix, self.packets, self.speed, self.openKey, self.file) = (mix, packets, speed, openKey, file)
        }
    }

    public struct Report: Sendable {
        public var packetsSent = 0, framesSent = 0
        public var packetsReceived = 0, audioPackets = 0, videoPackets = 0
        /// Packets that did not unprotect, or were not RTP once unprotected.
        public var unprotectFailures = 0, malformed = 0
        public var framesOpened = 0, framesFailed = 0, bytesWritten = 0
        /// The receiving thread's CPU seconds, from before its first read to after its last packet.
        public var receiverCPUSeconds = 0.0
        public var srtpLibrary = ""
        /// Sent but never read: on one host only the kernel drops (a full receive buffer).
        public var lostByKernel: Int { packetsSent - packetsReceived }
        public var microsecondsPerPacket: Double { packetsReceived > 0 ? receiverCPUSeconds * 1e6 / Double(packetsReceived) : 0 }
    }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Runs the plan: blocks the calling thread (it is the receiver) until the sender is done
    /// and its packets are read or lost. Call it off Swift's cooperative pool (OffPool.run).
    public static func measure(_ plan: Plan) throws(Failure) -> Report {
        var why: UnsafePointer<CChar>? = nil
        guard let library = sfb_limit_srtp_library(&why) else { throw Failure(description: String(cString: why!)) }
        var srtpKey = [UInt8](repeating: 0, count: Int(SFB_LIMIT_KEY_LENGTH))
        for i in srtpKey.indices { srtpKey[i] = UInt8.random(in: 0...255) }
        guard let inbound = sfb_limit_srtp_new(srtpKey, 1, &why), let outbound = sfb_limit_srtp_new(srtpKey, 0, &why) else {
            throw Failure(description: String(cString: why!))
        }
        defer { sfb_limit_srtp_free(inbound); sfb_limit_srtp_free(outbound) }
        var port: UInt16 = 0
        // 8 MB: the receiver may fall behind a burst without the kernel dropping (forced past rmem_max as root).
        let rfd = sfb_limit_receiver_socket(8 << 20, 200, &port)
        guard rfd >= 0 else { throw Failure(description: "no UDP socket on 127.0.0.1: \(String(cString: strerror(errno)))") }
        defer { close(rfd) }
        let sfd = sfb_limit_sender_socket(port)
        guard sfd >= 0 else { throw Failure(description: "cannot connect a UDP socket to 127.0.0.1:\(port)") }
        defer { close(sfd) }
        let out = open(plan.file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard out >= 0 else { throw Failure(description: "cannot write \(plan.file): \(String(cString: strerror(errno)))") }
        defer { close(out) }

        let sent = Locked<Sender.Sent?>(nil)
        let sender = Sender(mix: plan.mix, packets: plan.packets, speed: plan.speed, fd: sfd, sessions: [UnsafeSendable(outbound)])
        let thread = Thread { let r = sender.run(); sent.withLock { $0 = r } }
        thread.start()

        var report = Report()
        report.srtpLibrary = String(cString: library)
        let cpu0 = threadCPUSeconds()
        receiveAll(fd: rfd, session: inbound, keys: KeyRing.Candidates(current: plan.openKey), file: out, sent: sent, report: &report)
        let cpu1 = threadCPUSeconds()
        while sent.withLock({ $0 == nil }) { usleep(1000) }
        let s = sent.withLock { $0 }!
        report.packetsSent = s.packets
        report.framesSent = s.frames
        report.receiverCPUSeconds = cpu1 - cpu0
        return report
    }

    /// The receiving loop: reads, unprotects, opens and writes until the sender is done and
    /// every packet it sent was read, or nothing more came for 200 ms (the socket's timeout).
    static func receiveAll(fd: Int32, session: OpaquePointer, keys: KeyRing.Candidates, file: Int32, sent: borrowing Locked<Sender.Sent?>, report: inout Report) {
        var receiver = Receiver(keys: keys, fd: file)
        defer { receiver.free() }
        let slots = UnsafeMutableRawBufferPointer.allocate(byteCount: Int(SFB_LIMIT_BATCH) * Int(SFB_LIMIT_SLOT), alignment: 16)
        defer { slots.deallocate() }
        let packets = UnsafeMutableBufferPointer<SfbLimitPacket>.allocate(capacity: Int(SFB_LIMIT_BATCH))
        defer { packets.deallocate() }
        while true {
            let n = Int(sfb_limit_receive(fd, session, slots.baseAddress!.assumingMemoryBound(to: UInt8.self), packets.baseAddress!))
            if n == 0 {
                // A read timed out: done once the sender is and nothing more came for 200 ms.
                if sent.withLock({ $0 != nil }) { break } else { continue }
            }
            for i in 0..<n { receiver.take(packets[i], slot: slots.baseAddress! + i * Int(SFB_LIMIT_SLOT), report: &report) }
            if let s = sent.withLock({ $0 }), report.packetsReceived >= s.packets { break }
        }
        receiver.flush(report: &report)
    }

    static func threadCPUSeconds() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }
}

/// A C pointer handed to one other thread, which alone uses it until it is done.
struct UnsafeSendable<T>: @unchecked Sendable { let value: T; init(_ value: T) { self.value = value } }
