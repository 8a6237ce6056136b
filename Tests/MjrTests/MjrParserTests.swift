@testable import Mjr
import FrameCrypto
import Foundation
import Testing

/// The `.mjr` reader on files built byte by byte (no Janus, no GStreamer).
@Suite struct MjrParserTests {
    /// "MEET", time (ms, BE32), length (BE16), then a 12-byte RTP header and `payload`.
    static func packet(seq: UInt16, ts: UInt32, marker: Bool = false, millis: UInt32, payload: [UInt8]) -> [UInt8] {
        let length = 12 + payload.count
        var b: [UInt8] = Array("MEET".utf8)
        b += [UInt8(millis >> 24), UInt8(millis >> 16 & 0xFF), UInt8(millis >> 8 & 0xFF), UInt8(millis & 0xFF)]
        b += [UInt8(length >> 8), UInt8(length & 0xFF)]
        b += [0x80, (marker ? 0x80 : 0) | 111, UInt8(seq >> 8), UInt8(seq & 0xFF)]
        b += [UInt8(ts >> 24), UInt8(ts >> 16 & 0xFF), UInt8(ts >> 8 & 0xFF), UInt8(ts & 0xFF), 1, 2, 3, 4]
        return b + payload
    }

    static func header(_ info: String) -> [UInt8] {
        Array("MJR00002".utf8) + [UInt8(info.utf8.count >> 8), UInt8(info.utf8.count & 0xFF)] + Array(info.utf8)
    }

    static let info = #"{"t":"a","c":"opus","s":1700000000000000,"u":1700000000250000,"e":true}"#

    @Test func readsHeaderInfoAndPacketsAndStopsAtACutPacket() throws {
        var bytes = Self.header(Self.info)
        bytes += Self.packet(seq: 65534, ts: 4_294_966_336, millis: 0, payload: [0xAA, 1])
        bytes += Self.packet(seq: 0, ts: 1_280, millis: 40, payload: [0xAA, 3])          // arrived early
        bytes += Self.packet(seq: 65535, ts: 320, millis: 41, payload: [0xAA, 2])
        let cut = Self.packet(seq: 1, ts: 2_240, millis: 60, payload: [0xAA, 4, 5, 6])
        bytes += cut.dropLast(3)                                                          // Janus killed mid-write
        let file = try MjrFile(data: Data(bytes), path: "x.mjr")
        #expect(file.kind == .audio && file.codec == "opus" && file.e2eeFlag)
        #expect(file.created == Date(timeIntervalSince1970: 1_700_000_000))
        #expect(file.firstPacket == Date(timeIntervalSince1970: 1_700_000_000.25))
        #expect(file.packets.count == 3 && file.truncated)
        #expect(file.packets.map(\.millis) == [0, 40, 41])

        // Sorted by sequence across the 16-bit wrap, timestamps unwrapped across the 32-bit one.
        let rtp = MjrRTP(file)
        #expect(rtp.packets.map(\.seq) == [65534, 65535, 65536])
        #expect(rtp.packets.map(\.timestamp) == [4_294_966_336, 4_294_967_616, 4_294_968_576])
        #expect(rtp.lost == 0)
        #expect(rtp.packets.map { file.data[$0.payload.last!] } == [1, 2, 3])
    }

    @Test func aWholeFileIsNotTruncated() throws {
        let bytes = Self.header(Self.info) + Self.packet(seq: 1, ts: 0, millis: 0, payload: [0xAA]) + Self.packet(seq: 3, ts: 1920, millis: 40, payload: [0xAA])
        let file = try MjrFile(data: Data(bytes), path: "x.mjr")
        #expect(!file.truncated && file.packets.count == 2)
        #expect(MjrRTP(file).lost == 1)
    }

    @Test func refusesWhatIsNoRecording() throws {
        func message(_ bytes: [UInt8]) -> String? {
            do { _ = try MjrFile(data: Data(bytes), path: "f.mjr"); return nil } catch { return error.description }
        }
        #expect(message([])?.contains("empty") == true)
        #expect(message(Array("hello world, not a recording".utf8))?.contains("not a Janus recording") == true)
        #expect(message(Array("MJR00001xxxx".utf8))?.contains("MJR00001") == true)
        #expect(message(Array("MJR00002".utf8))?.contains("no info line") == true)
        #expect(message(Self.header(#"{"t":"d","c":"text"}"#))?.contains("data channel") == true)
        #expect(message(Self.header(#"{"t":"v","c":"vp8"}"#))?.contains("vp8") == true)
        let dir = FileManager.default.temporaryDirectory.path
        #expect(throws: MjrError.self) { try MjrFile(path: dir) }
        #expect((try? MjrFile(path: dir)) == nil)
        do { _ = try MjrFile(path: dir) } catch { #expect(error.description.contains("is a folder")) }
    }

    @Test func h264PacketsBecomeOneLengthPrefixedAccessUnit() {
        // STAP-A (SPS 3 bytes, PPS 2 bytes), then an IDR slice in three FU-A fragments.
        let stap: [UInt8] = [0x78, 0, 3, 0x67, 1, 2, 0, 2, 0x68, 3]
        let fus: [[UInt8]] = [[0x7C, 0x85, 10, 11], [0x7C, 0x05, 12], [0x7C, 0x45, 13, 14]]
        var d = H264Depacketizer()
        let ok = ([stap] + fus).map { Array($0) }.withUnsafeBufferPointers { d.build($0) }
        #expect(ok)
        #expect(d.bytes == [0, 0, 0, 3, 0x67, 1, 2, 0, 0, 0, 2, 0x68, 3, 0, 0, 0, 6, 0x65, 10, 11, 12, 13, 14])
        // A missing middle fragment leaves the end without a start: no access unit.
        let broken = [fus[0] + [], fus[2]].withUnsafeBufferPointers { d.build($0) }
        #expect(broken)  // start … end is well formed at RTP level; the gap is caught by sequence numbers
        let noStart = [fus[1], fus[2]].withUnsafeBufferPointers { d.build($0) }
        #expect(!noStart)
        let noEnd = [fus[0], fus[1]].withUnsafeBufferPointers { d.build($0) }
        #expect(!noEnd)
    }

    @Test func janusFileNamesOfOnePublisherGoTogether() {
        #expect(MjrGroup.stem("/r/videoroom-1234-user-567-1700000000123456-audio-0.mjr") == "videoroom-1234-user-567")
        #expect(MjrGroup.stem("videoroom-1234-user-567-1700000000123999-video-1.mjr") == "videoroom-1234-user-567")
        #expect(MjrGroup.senderID("videoroom-1234-user-567") == "567")
        #expect(MjrGroup.stem("alice-audio.mjr") == "alice" && MjrGroup.senderID("alice") == nil)
    }
}

extension Array where Element == [UInt8] {
    /// Calls `body` with every array's bytes, all valid at once.
    func withUnsafeBufferPointers<R>(_ body: ([UnsafeRawBufferPointer]) -> R) -> R {
        func go(_ i: Int, _ acc: [UnsafeRawBufferPointer]) -> R {
            guard i < count else { return body(acc) }
            return self[i].withUnsafeBytes { go(i + 1, acc + [$0]) }
        }
        return go(0, [])
    }
}
