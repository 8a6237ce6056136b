import Foundation

/// The audio packets an Ogg Opus file holds, counted from its pages as they are on disk: what
/// FFmpeg's `-count_packets` counts, and what the manifest's `on_disk.frames` must say.
///
/// GStreamer's reading cannot be trusted for the count: oggdemux in pull mode ends the stream
/// at the last page's granule position, and the parser after it drops what lies past that end.
/// A file whose last page's granule is below an earlier one (timestamps that went back at the
/// end) was read back 48 frames short of the 151 ffprobe counts (issue 39: "holds 613 of the
/// 615 audio frames written to it", a loss that was not one).
enum OggPackets {
    /// Opus in Ogg begins with two header packets (OpusHead, OpusTags) that are no frames.
    static let headerPackets = 2

    /// Data packets of the file's first logical stream, in whole pages whose checksum is
    /// right; a page cut short by a killed writer holds none. Nil if the file cannot be read.
    static func count(_ url: URL) -> Int? {
        guard let data = try? Data(contentsOf: url, options: .alwaysMapped) else { return nil }
        return data.withUnsafeBytes { count(in: $0) }
    }

    static func count(in bytes: UnsafeRawBufferPointer) -> Int {
        let n = bytes.count
        var at = 0, packets = 0
        var serial: UInt32?
        while at + 27 <= n {
            // A page begins "OggS" and version 0; anything else is skipped byte by byte (resync).
            guard bytes[at] == 0x4F, bytes[at + 1] == 0x67, bytes[at + 2] == 0x67, bytes[at + 3] == 0x53, bytes[at + 4] == 0 else {
                at += 1
                continue
            }
            let segments = Int(bytes[at + 26])
            guard at + 27 + segments <= n else { break }
            let table = bytes[(at + 27)..<(at + 27 + segments)]
            let size = 27 + segments + table.reduce(0) { $0 + Int($1) }
            guard at + size <= n else { break }
            guard checksum(bytes, page: at, size: size) == u32(bytes, at + 22) else {
                at += 1
                continue
            }
            let pageSerial = u32(bytes, at + 14)
            if serial == nil { serial = pageSerial }
            // A lacing value below 255 ends a packet; a packet continued on the next page ends there.
            if pageSerial == serial { packets += table.filter { $0 < 255 }.count }
            at += size
        }
        return max(0, packets - headerPackets)
    }

    private static func u32(_ b: UnsafeRawBufferPointer, _ at: Int) -> UInt32 {
        UInt32(b[at]) | UInt32(b[at + 1]) << 8 | UInt32(b[at + 2]) << 16 | UInt32(b[at + 3]) << 24
    }

    /// Ogg's CRC-32 (polynomial 0x04C11DB7, not reflected) of the page with its checksum field as 0.
    static func checksum(_ b: UnsafeRawBufferPointer, page at: Int, size: Int) -> UInt32 {
        var crc: UInt32 = 0
        for i in at..<(at + size) {
            let byte = (at + 22..<at + 26).contains(i) ? 0 : b[i]
            crc = (crc << 8) ^ table[Int((crc >> 24) ^ UInt32(byte))]
        }
        return crc
    }

    private static let table: [UInt32] = (0..<256).map { i in
        var c = UInt32(i) << 24
        for _ in 0..<8 { c = c & 0x8000_0000 != 0 ? (c << 1) ^ 0x04C1_1DB7 : c << 1 }
        return c
    }
}
