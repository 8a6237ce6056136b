import CDirectRTP
import CGStreamer
import Foundation
import GStreamerKit
import Locking
import Synchronization
import Testing

/// The frame path's H.264 packetizer (packetize.c) against rtph264pay itself: the same x264
/// access units through both must give the same RTP payloads and markers, packet for packet.
@Suite struct PacketizerTests {
    struct Packet: Equatable, CustomStringConvertible {
        var payload: [UInt8]
        var marker: Bool
        var description: String { "\(payload.count) B type \(payload.first.map { $0 & 0x1f } ?? 0)\(marker ? " M" : "")" }
    }

    final class Collected: Sendable {
        let units = Locked<[[UInt8]]>([])
        let packets = Locked<[Packet]>([])
    }

    /// Runs x264's access units through rtph264pay at `mtu`; returns them, its packets and codec_data.
    func payloaded(mtu: Int) async throws -> (units: [[UInt8]], packets: [Packet], codecData: [UInt8]) {
        let pipeline = try Pipeline(description: """
            videotestsrc num-buffers=45 pattern=smpte horizontal-speed=4 ! video/x-raw,width=640,height=360,framerate=15/1
            ! x264enc tune=zerolatency speed-preset=ultrafast bitrate=600 key-int-max=15 bframes=0 threads=1 sliced-threads=false
            ! video/x-h264,profile=constrained-baseline ! h264parse config-interval=0 ! video/x-h264,stream-format=avc,alignment=au
            ! identity name=au ! rtph264pay name=pay pt=96 mtu=\(mtu) config-interval=-1 aggregate-mode=zero-latency
            ! identity name=rtp ! fakesink sync=false
            """)
        let got = Collected()
        // identity's src pad sees each packet alone (it has no list function: lists are split).
        let probes = [
            try pipeline.element(named: "au").staticPad("src").addBufferObserver { bytes in got.units.withLock { $0.append(Array(bytes)) } },
            try pipeline.element(named: "rtp").staticPad("src").addBufferObserver { bytes in
                got.packets.withLock { $0.append(Packet(payload: Array(bytes[12...]), marker: bytes[1] & 0x80 != 0)) }
            },
        ]
        defer { probes.forEach { $0.remove() } }
        try pipeline.setState(.playing)
        defer { pipeline.setStateQuietly(.null) }
        for await message in pipeline.bus.messages() {
            if case .endOfStream = message { break }
            if case .error(_, let text, _) = message { throw GStreamerError.parse(text) }
        }
        let caps = try pipeline.element(named: "au").staticPad("src").caps ?? ""
        let hex = caps.firstMatch(of: /codec_data=\(buffer\)([0-9a-f]+)/).map { String($0.1) } ?? ""
        let codecData = stride(from: 0, to: hex.count, by: 2).map { i -> UInt8 in
            let start = hex.index(hex.startIndex, offsetBy: i)
            return UInt8(hex[start..<hex.index(start, offsetBy: 2)], radix: 16)!
        }
        return (got.units.withLock { $0 }, got.packets.withLock { $0 }, codecData)
    }

    final class Sink { var packets: [Packet] = [] }

    func packetized(_ units: [[UInt8]], codecData: [UInt8], mtu: Int) -> [Packet]? {
        var params = SfbH264Params()
        params.mtu = guint(mtu)
        guard codecData.withUnsafeBufferPointer({ sfb_h264_params_parse(&params, $0.baseAddress, gsize($0.count)) }) != 0 else { return nil }
        let sink = Sink()
        var out = [UInt8](repeating: 0, count: mtu)
        for unit in units {
            unit.withUnsafeBufferPointer { au in
                out.withUnsafeMutableBufferPointer { o in
                    _ = sfb_h264_packetize(&params, au.baseAddress, gsize(au.count), o.baseAddress, { ctx, payload, len, marker in
                        let sink = Unmanaged<Sink>.fromOpaque(ctx!).takeUnretainedValue()
                        sink.packets.append(Packet(payload: Array(UnsafeBufferPointer(start: payload, count: Int(len))), marker: marker != 0))
                    }, Unmanaged.passUnretained(sink).toOpaque())
                }
            }
        }
        return sink.packets
    }

    @Test("x264's access units cut as rtph264pay cuts them (SPS/PPS before each IDR, STAP-A, FU-A, markers)", arguments: [1400, 1200, 300])
    func sameAsRTPH264Pay(mtu: Int) async throws {
        let (units, packets, codecData) = try await payloaded(mtu: mtu)
        #expect(units.count == 45)
        let ours = try #require(packetized(units, codecData: codecData, mtu: mtu))
        #expect(ours.count == packets.count)
        for (i, (a, b)) in zip(ours, packets).enumerated() where a != b {
            Issue.record("packet \(i): ours \(a), rtph264pay's \(b)")
            break
        }
        // The stream had what the comparison is about: IDRs with their parameter sets, fragments.
        #expect(packets.contains { $0.payload.first.map { $0 & 0x1f } == 24 })
        #expect(packets.contains { $0.payload.first.map { $0 & 0x1f } == 28 })
        #expect(packets.filter(\.marker).count == 45)
    }

    @Test("codec_data that is cut short or not version 1 is refused")
    func badCodecData() {
        var params = SfbH264Params()
        let good: [UInt8] = [1, 0x42, 0xc0, 0x1e, 0xff, 0xe1, 0, 2, 0x67, 0x42, 1, 0, 1, 0x68]
        func parse(_ data: [UInt8]) -> Bool { data.withUnsafeBufferPointer { sfb_h264_params_parse(&params, $0.baseAddress, gsize($0.count)) } != 0 }
        #expect(!parse(Array(good.dropLast())))
        #expect(!parse([0] + good.dropFirst()))
        #expect(parse(good))
        #expect(params.nal_length_size == 4 && params.n_sets == 2 && params.set_len.0 == 2 && params.set_len.1 == 1)
    }
}
