public import Foundation

/// Writes `.mjr` files the way Janus's `record.c` does (MJR00002), for benchmarks and tests
/// that need recordings without a Janus: the info line, then one `MEET` packet per RTP packet.
/// Video access units are packetized as Janus would have received them (RFC 6184: single NAL
/// unit packets, FU-A above `mtu`).
public struct MjrWriter {
    public private(set) var data = Data()
    private let kind: MjrFile.Kind
    private var seq: UInt16 = 1000
    private let ssrc: UInt32 = 0x1234_5678
    private let mtu: Int

    /// `created`/`firstPacket`: the info line's `s` and `u`.
    public init(kind: MjrFile.Kind, created: Date, firstPacket: Date, mtu: Int = 1200) {
        self.kind = kind
        self.mtu = mtu
        data.append(contentsOf: MjrFile.magic)
        let s = Int64(created.timeIntervalSince1970 * 1e6), u = Int64(firstPacket.timeIntervalSince1970 * 1e6)
        let info = kind == .audio ? #"{"t":"a","c":"opus","s":\#(s),"u":\#(u)}"# : #"{"t":"v","c":"h264","s":\#(s),"u":\#(u)}"#
        data.append(UInt8(info.utf8.count >> 8)); data.append(UInt8(info.utf8.count & 0xFF))
        data.append(contentsOf: info.utf8)
    }

    /// An audio frame (one RTP packet) at RTP time `timestamp`, written `millis` after the first.
    public mutating func appendAudio(_ frame: [UInt8], timestamp: UInt32, millis: UInt32) {
        appendPacket(payload: frame[...], timestamp: timestamp, marker: false, millis: millis)
    }

    /// A length-prefixed (4-byte) access unit, one RTP packet per NAL unit or FU-A fragments.
    public mutating func appendVideo(_ au: [UInt8], timestamp: UInt32, millis: UInt32) {
        var nals: [ArraySlice<UInt8>] = []
        var i = 0
        while i + 4 <= au.count {
            let n = Int(au[i]) << 24 | Int(au[i + 1]) << 16 | Int(au[i + 2]) << 8 | Int(au[i + 3])
            nals.append(au[(i + 4)..<min(au.count, i + 4 + n)])
            i += 4 + n
        }
        for (k, nal) in nals.enumerated() {
            let last = k == nals.count - 1
            if nal.count <= mtu {
                appendPacket(payload: nal, timestamp: timestamp, marker: last, millis: millis)
                continue
            }
            let header = nal[nal.startIndex]
            var at = nal.startIndex + 1
            while at < nal.endIndex {
                let end = min(nal.endIndex, at + mtu - 2)
                let fu: UInt8 = (at == nal.startIndex + 1 ? 0x80 : 0) | (end == nal.endIndex ? 0x40 : 0) | (header & 0x1F)
                appendPacket(payload: [(header & 0xE0) | 28, fu] + nal[at..<end], timestamp: timestamp, marker: last && end == nal.endIndex, millis: millis)
                at = end
            }
        }
    }

    private mutating func appendPacket<C: Collection<UInt8>>(payload: C, timestamp: UInt32, marker: Bool, millis: UInt32) {
        let length = 12 + payload.count
        data.append(contentsOf: MjrFile.packetMagic)
        data.append(contentsOf: [UInt8(millis >> 24), UInt8((millis >> 16) & 0xFF), UInt8((millis >> 8) & 0xFF), UInt8(millis & 0xFF)])
        data.append(contentsOf: [UInt8(length >> 8), UInt8(length & 0xFF)])
        let pt: UInt8 = kind == .audio ? 111 : 96
        data.append(contentsOf: [0x80, (marker ? 0x80 : 0) | pt, UInt8(seq >> 8), UInt8(seq & 0xFF)])
        data.append(contentsOf: [UInt8(timestamp >> 24), UInt8((timestamp >> 16) & 0xFF), UInt8((timestamp >> 8) & 0xFF), UInt8(timestamp & 0xFF)])
        data.append(contentsOf: [UInt8(ssrc >> 24), UInt8((ssrc >> 16) & 0xFF), UInt8((ssrc >> 8) & 0xFF), UInt8(ssrc & 0xFF)])
        data.append(contentsOf: payload)
        seq &+= 1
    }
}
