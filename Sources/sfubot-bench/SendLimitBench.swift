import Foundation
import FrameCrypto
import GStreamerKit
import ReceiveLimit

/// `sfubot-bench send-limit [--publishers N] [--seconds S | --packets P] [--speed X | --rate R] [--phases step|spread]`:
/// the send limit (SendLimit) on the phone preset's traffic of N publishers (50), sent at X times
/// its real rate (1), or scaled to R packets a second in all, for S seconds (10) or P packets;
/// the publishers' frames in step (as `sfubot load`'s, one shared encoder) or spread over 20 ms.
/// Prints the `send limit: X µs per sent packet …` line scripts/bench-load reads. Exit 1 if a
/// frame did not seal, a packet did not protect, or the sink did not get every packet
/// unprotected and every frame opened.
enum SendLimitBench {
    static func run(_ args: ArraySlice<String>) -> Int32 {
        var options = LimitOptions(publishers: 50), rate: Double? = nil, inStep = true
        var rest = args
        while let flag = rest.popFirst() {
            guard let value = rest.popFirst() else { return usage("\(flag) needs a value") }
            do { if try options.take(flag, value) { continue } } catch { return usage(error.why) }
            switch flag {
            case "--rate": guard let v = Double(value), v > 0 else { return usage("--rate: packets a second") }; rate = v
            case "--phases": guard value == "step" || value == "spread" else { return usage("--phases: step or spread") }; inStep = value == "step"
            default: return usage("unknown option \(flag)")
            }
        }
        let (publishers, seconds, packets) = (options.publishers, options.seconds, options.packets)
        var speed = options.speed
        // The libsrtp2 the load publishers use: the OpenSSL build when installed (docs/performance.md).
        SRTPLibrary.preload()
        let key = CallKey.random()
        let mix: TrafficMix
        do { mix = try TrafficMix(publishers: publishers, key: key, inStep: inStep) } catch {
            print("send-limit: making the traffic failed: \(error)")
            return 1
        }
        // The mix's own rate scaled to the one asked (sfubot's publishers send a little more video).
        if let rate { speed = rate / Double(mix.packetsPerPublisherSecond.all * publishers) }
        guard speed.isFinite || packets != nil else { return usage("--speed inf needs --packets") }
        let count = packets ?? Int(Double(mix.packetsPerPublisherSecond.all * publishers) * seconds * speed)
        print("send-limit: \(mix.description); \(count) packets at \(speed)× that rate")
        let r: SendLimit.Report
        do { r = try SendLimit.measure(.init(mix: mix, packets: count, speed: speed, sealKey: key, openKey: key, file: "/dev/null")) } catch {
            print("send-limit: \(error)")
            return 1
        }
        let s = r.sink
        let load = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").prefix(3).joined(separator: " ") ?? "?"
        print("  libsrtp2: \(r.srtpLibrary) (AES_CM_128_HMAC_SHA1_80), \(r.sessions) sessions; sealed and sent \(r.framesSent) frames, "
              + "\(r.sealFailures) did not seal, \(r.protectFailures) packets did not protect; sender CPU \(String(format: "%.3f", r.senderCPUSeconds)) s")
        print("  the sink: \(s.packetsReceived) packets read (\(s.lostByKernel) lost by the kernel), \(s.unprotectFailures) did not unprotect, "
              + "\(s.malformed) malformed; frames opened \(s.framesOpened) of \(r.framesSent), \(s.framesFailed) failed; "
              + "\(s.bytesWritten) of \(r.plainBytesSent) plaintext bytes")
        print("send limit: \(String(format: "%.2f", r.microsecondsPerPacket)) µs per sent packet (\(String(format: "%.2f", r.kernelMicrosecondsPerPacket)) in the kernel; "
              + "\(r.packetsSent) packets, load average \(load))")
        let whole = r.packetsSent > 0 && r.sealFailures == 0 && r.protectFailures == 0 && s.lostByKernel == 0
            && s.unprotectFailures == 0 && s.malformed == 0 && s.framesOpened == r.framesSent && s.bytesWritten == r.plainBytesSent
        return whole ? 0 : 1
    }

    static func usage(_ why: String) -> Int32 {
        print("sfubot-bench send-limit: \(why)\nusage: sfubot-bench send-limit [--publishers N] [--seconds S | --packets P] [--speed X | --rate R] [--phases step|spread]")
        return 64
    }
}
