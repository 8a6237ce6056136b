/// A line-by-line Swift copy of what libwebrtc reads from an H.264 slice on receive, BEFORE the
/// decrypting frame transform runs (webrtc-sdk/webrtc cd6792e5, Oct 2024):
/// - modules/rtp_rtcp/source/video_rtp_depacketizer_h264.cc:195-205 (single NAL / STAP-A) and
///   :246-257 (first FU-A fragment) call PpsParser::ParsePpsIdFromSlice on the bytes after the
///   NAL header (newer upstream: PpsParser::ParseSliceHeader, same three reads, also keeping
///   first_mb_in_slice and dropping the packet when the read fails);
/// - common_video/h264/pps_parser.cc:56-71: ParseRbsp, then ue(v) first_mb_in_slice,
///   ue(v) slice_type, ue(v) pic_parameter_set_id; nothing further;
/// - common_video/h264/h264_common.cc:69-90 (ParseRbsp), rtc_base/bitstream_reader.cc:109-124
///   (ReadExponentialGolomb: 32 leading zeros invalidate the reader).
/// Kept independent of FrameCrypto's own parser on purpose: the tests check one against the other.
enum LibWebRTCSliceParser {
    struct Header: Equatable { var firstMB: UInt32, sliceType: UInt32, ppsID: UInt32 }

    /// h264_common.cc ParseRbsp.
    static func parseRbsp(_ data: ArraySlice<UInt8>) -> [UInt8] {
        let data = Array(data)
        var out: [UInt8] = []
        var i = 0
        while i < data.count {
            if data.count - i >= 3, data[i] == 0, data[i + 1] == 0, data[i + 2] == 3 {
                out.append(data[i]); out.append(data[i + 1]); i += 3
            } else {
                out.append(data[i]); i += 1
            }
        }
        return out
    }

    struct BitstreamReader {
        let bytes: [UInt8]
        var position = 0
        var ok = true
        mutating func readBit() -> UInt32 {
            guard position < bytes.count * 8 else { ok = false; return 0 }
            defer { position += 1 }
            return UInt32(bytes[position / 8] >> (7 - UInt8(position % 8)) & 1)
        }
        mutating func readExponentialGolomb() -> UInt32 {
            var zeros = 0
            while readBit() == 0 {
                if !ok { return 0 }
                zeros += 1
                if zeros >= 32 { ok = false; return 0 }
            }
            var value: UInt64 = 0
            for _ in 0..<zeros { value = value << 1 | UInt64(readBit()) }
            return UInt32(truncatingIfNeeded: (UInt64(1) << zeros) + value - 1)
        }
    }

    /// pps_parser.cc ParsePpsIdFromSlice / ParseSliceHeader on a whole slice NAL unit (header
    /// byte included, skipped here as the depacketizer does). Only the first 64 bytes are
    /// unescaped: the three codes end long before (at most 3 × 63 bits).
    static func parse(nal: [UInt8]) -> Header? {
        guard nal.count > 1 else { return nil }
        var reader = BitstreamReader(bytes: parseRbsp(nal[1..<min(nal.count, 65)]))
        let firstMB = reader.readExponentialGolomb()
        let sliceType = reader.readExponentialGolomb()
        let pps = reader.readExponentialGolomb()
        return reader.ok ? Header(firstMB: firstMB, sliceType: sliceType, ppsID: pps) : nil
    }
}

/// Real x264 output: `x264enc tune=zerolatency speed-preset=ultrafast bitrate=96 key-int-max=20
/// bframes=0 threads=1 sliced-threads=false`, 640x360 videotestsrc pattern=blink, constrained
/// baseline (the play-test-pattern pipeline). The first IDR slice and the first P slice, whole.
enum X264Slices {
    static let idr = [UInt8](hex: "65888416898a00023bf2727272727272727272727272727272727272727272727272727272727272727272727272727275d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d75d78")
    static let nonIDR = [UInt8](hex: "419a204a89c5000118ac4f89f13e27c4f89f13e27c4f89f13e27c4f89f13e27c4f89f13e27c4f89f13e27c4f89f13e27c4f89f13e27c4f89f13e27c4f89f13e7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe7f3f9fcfe0")
}
