import Foundation
import FrameCrypto
import GStreamerKit
import ReceiveLimit

/// `sfubot-bench receive-limit [--publishers N] [--seconds S | --packets P] [--speed X]`: the
/// receive limit (ReceiveLimit) on the phone preset's traffic of N publishers (20), sent at
/// X times its real rate (1) for S seconds (10) or P packets. Prints the
/// `receive limit: X µs per received packet …` line scripts/bench-record reads. Exit 1 if a
/// packet did not unprotect, a frame did not open, or nothing was received.
enum ReceiveLimitBench {
    static func run(_ args: ArraySlice<String>) -> Int32 {
        var options = LimitOptions(publishers: 20)
        var rest = args
        while let flag = rest.popFirst() {
            guard let value = rest.popFirst() else { return usage("\(flag) needs a value") }
            do { guard try options.take(flag, value) else { return usage("unknown option \(flag)") } } catch { return usage(error.why) }
        }
        let (publishers, seconds, packets, speed) = (options.publishers, options.seconds, options.packets, options.speed)
        // The libsrtp2 the recorder uses: the OpenSSL build when installed (docs/performance.md).
        SRTPLibrary.preload()
        let key = CallKey.random()
        let mix: TrafficMix
        do { mix = try TrafficMix(publishers: publishers, key: key) } catch {
            print("receive-limit: sealing the traffic failed: \(error)")
            return 1
        }
        let count = packets ?? Int(Double(mix.packetsPerPublisherSecond.all * publishers) * seconds * speed)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("sfubot-receive-limit-\(getpid()).bin").path
        defer { unlink(file) }
        print("receive-limit: \(mix.description); \(count) packets at \(speed)× that rate")
        let r: ReceiveLimit.Report
        do { r = try ReceiveLimit.measure(.init(mix: mix, packets: count, speed: speed, openKey: key, file: file)) } catch {
            print("receive-limit: \(error)")
            return 1
        }
        let load = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").prefix(3).joined(separator: " ") ?? "?"
        print("  libsrtp2: \(r.srtpLibrary) (AES_CM_128_HMAC_SHA1_80); received \(r.audioPackets) audio, \(r.videoPackets) video packets; "
              + "frames opened \(r.framesOpened) of \(r.framesSent) sent, \(r.framesFailed) failed to open; \(r.unprotectFailures) packets did not unprotect, "
              + "\(r.malformed) malformed; \(r.bytesWritten) bytes written; receiver CPU \(String(format: "%.3f", r.receiverCPUSeconds)) s")
        print("receive limit: \(String(format: "%.2f", r.microsecondsPerPacket)) µs per received packet (\(r.packetsReceived) packets, "
              + "\(r.lostByKernel) lost by the kernel, load average \(load))")
        return r.packetsReceived > 0 && r.unprotectFailures == 0 && r.malformed == 0 && r.framesFailed == 0 ? 0 : 1
    }

    static func usage(_ why: String) -> Int32 {
        print("sfubot-bench receive-limit: \(why)\nusage: sfubot-bench receive-limit [--publishers N] [--seconds S | --packets P] [--speed X]")
        return 64
    }
}
