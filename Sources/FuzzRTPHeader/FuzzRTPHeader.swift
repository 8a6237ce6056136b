import CDirectRTP
import CGStreamer
import FuzzSupport
import GStreamerKit

// libFuzzer target (`make fuzz`): the direct path's C parsers (rtp_parse.c) on any bytes. The
// RTP payload length must be GStreamerKit's RTPPayload's (the tested Swift), and the RTCP
// report and NACK readers must stay inside the input (AddressSanitizer) and count only what fits.
// No main: libFuzzer's drives this function.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRTPHeader(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    // A copy of exactly `size` bytes, so that ASan sees a read one past the end.
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    input.withUnsafeBufferPointer { p in
        let c = Int(sfb_rtp_payload_length(p.baseAddress, UInt(size)))
        let swift = RTPPayload.range(in: UnsafeRawBufferPointer(p), packet: 0..<size)?.count ?? 0
        check(c == swift, "payload length: C \(c), RTPPayload \(swift), packet \(input.prefix(32))")

        // The SSRC asked for is one the input may hold: its first report block's, if any.
        let ssrc: UInt32 = size >= 12 ? UInt32(input[8]) << 24 | UInt32(input[9]) << 16 | UInt32(input[10]) << 8 | UInt32(input[11]) : 0
        var lost: gint64 = 0, jitter: UInt32 = 0
        let found = Int(sfb_rtcp_report_blocks(p.baseAddress, UInt(size), ssrc, &lost, &jitter))
        // Each block is 24 bytes and follows at least an 8-byte RR header.
        check(found * 24 <= max(0, size - 8), "\(found) report blocks in \(size) bytes")
        check(lost >= -0x80_0000 && lost < 0x80_0000, "cumulative loss \(lost) is not 24-bit")

        // NACKs: the media source SSRC sits where a feedback packet's is (bytes 8–11, as above).
        // Each 4-byte FCI entry names at most 17 packets; no more than `capacity` are written.
        var seqs = [UInt16](repeating: 0, count: 8)
        var messages: guint = 0
        let nacked = seqs.withUnsafeMutableBufferPointer { Int(sfb_rtcp_nacked(p.baseAddress, UInt(size), ssrc, $0.baseAddress, 8, &messages)) }
        check(nacked <= 17 * max(0, size - 12) / 4, "\(nacked) NACKed packets in \(size) bytes")
        check(Int(messages) * 16 <= size, "\(messages) NACKs in \(size) bytes")
    }
    return 0
}
