import Foundation
import FrameCrypto
import Locking
import ReceiveLimit
import Testing

/// The receive limit's run (sfubot-bench receive-limit) on 1000 packets of two phone-preset
/// publishers over 127.0.0.1, at 20 times their rate: with the frames' key every packet
/// unprotects and every frame opens and is written; with another key none opens, and each is
/// counted as failed rather than skipped. No Janus: the limit is what sfubot's receive path is
/// measured against.
@Suite struct ReceiveLimitTests {
    func run(openWith key: CallKey, sealedWith sealing: CallKey) async throws -> (ReceiveLimit.Report, Int) {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("receive-limit-\(UUID().uuidString.prefix(8)).bin").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        let mix = try TrafficMix(publishers: 2, key: sealing)
        let plan = ReceiveLimit.Plan(mix: mix, packets: 1000, speed: 20, openKey: key, file: file)
        let report = try await OffPool.run { () throws(ReceiveLimit.Failure) -> ReceiveLimit.Report in try ReceiveLimit.measure(plan) }
        let size = try FileManager.default.attributesOfItem(atPath: file)[.size] as? Int ?? -1
        return (report, size)
    }

    @Test func rightKeyOpensEveryFrame() async throws {
        let key = CallKey.random()
        let (r, size) = try await run(openWith: key, sealedWith: key)
        #expect(r.packetsSent >= 1000 && r.packetsSent < 1010, "the sender ends on the first frame boundary past 1000")
        #expect(r.packetsReceived == r.packetsSent && r.lostByKernel == 0)
        #expect(r.audioPackets + r.videoPackets == r.packetsReceived && r.audioPackets > 0 && r.videoPackets > r.audioPackets)
        #expect(r.unprotectFailures == 0 && r.malformed == 0)
        #expect(r.framesSent > 0 && r.framesOpened == r.framesSent && r.framesFailed == 0)
        #expect(r.bytesWritten > 0 && size == r.bytesWritten)
        #expect(r.receiverCPUSeconds > 0 && r.microsecondsPerPacket > 0)
    }

    @Test func wrongKeyOpensNothingAndCountsEveryFrame() async throws {
        let (r, size) = try await run(openWith: CallKey.random(), sealedWith: CallKey.random())
        #expect(r.packetsReceived == r.packetsSent && r.packetsSent >= 1000)
        #expect(r.unprotectFailures == 0, "SRTP is keyed apart from the frames")
        #expect(r.framesOpened == 0 && r.framesFailed == r.framesSent && r.framesSent > 0)
        #expect(r.bytesWritten == 0 && size == 0)
    }
}
