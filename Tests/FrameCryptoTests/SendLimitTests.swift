import Foundation
import FrameCrypto
import Locking
import ReceiveLimit
import Testing

/// The send limit's run (sfubot-bench send-limit) on 1000 packets of three phone-preset
/// publishers at 20 times their rate (in step, as the bench sends them; spread with the wrong
/// key): a sink on 127.0.0.1 unprotects every packet and opens every frame with the key, and
/// what it opened is exactly the plaintext sealed, so a limit that sent nothing, or anything in
/// clear, fails. With another key at the sink no frame opens and each is counted. No Janus:
/// the limit is what sfubot's send path is measured against.
@Suite struct SendLimitTests {
    func run(sealWith key: CallKey, openWith openKey: CallKey, inStep: Bool) async throws -> (SendLimit.Report, Int) {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("send-limit-\(UUID().uuidString.prefix(8)).bin").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        // The mix's own frames are sealed with another key: the sender must seal them again.
        let mix = try TrafficMix(publishers: 3, key: CallKey.random(), inStep: inStep)
        let plan = SendLimit.Plan(mix: mix, packets: 1000, speed: 20, sealKey: key, openKey: openKey, file: file)
        let report = try await OffPool.run { () throws(ReceiveLimit.Failure) -> SendLimit.Report in try SendLimit.measure(plan) }
        let size = try FileManager.default.attributesOfItem(atPath: file)[.size] as? Int ?? -1
        return (report, size)
    }

    @Test func sinkOpensEverySealedFrame() async throws {
        let key = CallKey.random()
        let (r, size) = try await run(sealWith: key, openWith: key, inStep: true)
        #expect(r.packetsSent >= 1000 && r.packetsSent < 1010, "the sender ends on the first frame boundary past 1000")
        #expect(r.sessions == 3 && r.sealFailures == 0 && r.protectFailures == 0)
        let s = r.sink
        #expect(s.packetsReceived == r.packetsSent && s.lostByKernel == 0)
        #expect(s.unprotectFailures == 0 && s.malformed == 0, "every packet SRTP-protected with the publishers' key")
        #expect(s.audioPackets > 0 && s.videoPackets > s.audioPackets)
        #expect(r.framesSent > 0 && s.framesOpened == r.framesSent && s.framesFailed == 0)
        #expect(r.plainBytesSent > 0 && s.bytesWritten == r.plainBytesSent && size == r.plainBytesSent)
        #expect(r.senderCPUSeconds > 0 && r.microsecondsPerPacket > 0 && r.senderKernelSeconds < r.senderCPUSeconds)
    }

    @Test func sinkWithAnotherKeyOpensNothing() async throws {
        let (r, size) = try await run(sealWith: CallKey.random(), openWith: CallKey.random(), inStep: false)
        #expect(r.packetsSent >= 1000 && r.sink.packetsReceived == r.packetsSent)
        #expect(r.sink.unprotectFailures == 0, "SRTP is keyed apart from the frames")
        #expect(r.sink.framesOpened == 0 && r.sink.framesFailed == r.framesSent && r.framesSent > 0)
        #expect(r.sink.bytesWritten == 0 && size == 0)
    }
}
