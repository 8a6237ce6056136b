import FastPath
import GStreamerKit
import Synchronization
import Testing
import Locking

/// Opening audio on the RTP pad (load subscribers, `--receive-path direct`): the transform
/// sees exactly the frames a depayloader would give it, and nothing goes on downstream.
@Suite struct RTPPayloadConsumerTests {
    init() { GStreamer.initialize() }

    @Test func payloadIsFoundPastCSRCsAndExtensionAndBeforePadding() {
        // V=2, P=1, X=1, CC=2; 2 CSRCs; extension header + 1 word; payload 5 bytes; 3 padding.
        var packet: [UInt8] = [0xB2, 111, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3] + [UInt8](repeating: 9, count: 8)
        packet += [0xBE, 0xDE, 0, 1, 1, 2, 3, 4] + [10, 11, 12, 13, 14] + [0, 0, 3]
        packet.withUnsafeBytes { b in
            #expect(RTPPayload.range(in: b, packet: 0..<b.count) == 28..<33)
            // Inside a larger buffer (as in a .mjr file): the same payload, shifted.
            #expect(RTPPayload.range(in: b, packet: 0..<b.count).map { Array(b[$0]) } == [10, 11, 12, 13, 14])
        }
        let plain: [UInt8] = [0x80, 111, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 42]
        plain.withUnsafeBytes { #expect(RTPPayload.range(in: $0, packet: 0..<$0.count) == 12..<13) }
    }

    @Test func malformedHeadersHaveNoPayload() {
        let cases: [[UInt8]] = [
            [0x80, 111, 0, 1, 0, 0, 0, 2, 0, 0, 0],                        // 11 bytes
            [0x40, 111, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 1],                  // version 1
            [0x90, 111, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0xBE, 0xDE, 0, 9],   // extension longer than the packet
            [0xA0, 111, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 1, 200],             // padding longer than the payload
            [0x8F, 111, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3],                     // 15 CSRCs that are not there
        ]
        for c in cases { c.withUnsafeBytes { #expect(RTPPayload.range(in: $0, packet: 0..<$0.count) == nil, "\(c)") } }
    }

    @Test func theConsumerSeesWhatTheDepayloaderGivesAndDropsEveryPacket() async throws {
        let pipeline = try Pipeline(description: """
            audiotestsrc num-buffers=50 ! opusenc ! rtpopuspay ! tee name=t \
            t. ! queue ! rtpopusdepay name=depay ! fakesink async=false \
            t. ! queue ! identity name=consume ! fakesink name=sink async=false
            """)
        let depayed = Frames(), consumed = Frames(), reachedSink = Atomic<Int>(0)
        let depayProbe = try pipeline.element(named: "depay").staticPad("src").addBufferObserver { depayed.add($0) }
        let consumer = try pipeline.element(named: "consume").staticPad("src").addRTPPayloadConsumer(Recorder(frames: consumed))
        let sinkProbe = try pipeline.element(named: "sink").staticPad("sink").addBufferObserver { _ in reachedSink.add(1, ordering: .relaxed) }
        defer { depayProbe.remove(); consumer.remove(); sinkProbe.remove() }
        try await pipeline.runToEnd()
        #expect(consumed.all.count > 40, "50 buffers of 1024 samples make about 54 Opus frames of 20 ms")
        #expect(consumed.all == depayed.all, "the same frames, in the same order")
        #expect(reachedSink.load(ordering: .relaxed) == 0, "every packet dropped at the consumer")
    }

    final class Frames: Sendable {
        private let list = Locked<[[UInt8]]>([])
        func add(_ b: UnsafeRawBufferPointer) { list.withLock { $0.append(Array(b)) } }
        var all: [[UInt8]] { list.withLock { $0 } }
    }

    /// Keeps each frame it is given and writes a copy, as an opener writes the plain frame.
    struct Recorder: FrameTransform {
        let frames: Frames
        func outputCapacity(for input: UnsafeRawBufferPointer) -> Int { input.count }
        func transform(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Int? {
            frames.add(input)
            output.copyMemory(from: input)
            return input.count
        }
    }
}
