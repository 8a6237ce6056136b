internal import CGStreamer
internal import CGStreamerShims
import Locking

/// The latest RTCP sender report heard from one remote source.
public struct RTCPSenderReport: Sendable, Equatable {
    public var ssrc: UInt32
    /// The report's NTP timestamp in seconds: a newer report has a later one.
    public var ntpTime: Double
    /// The packets its sender counts as sent (RTCP's 32-bit count).
    public var packets: UInt32

    public init(ssrc: UInt32, ntpTime: Double, packets: UInt32) {
        (self.ssrc, self.ntpTime, self.packets) = (ssrc, ntpTime, packets)
    }
}

extension WebRTCBin {
    /// The latest sender report of each remote source in webrtcbin's RTP sessions, from rtpbin's
    /// own record of them (`sfb_webrtc_sender_reports`), which lasts as long as reports arrive:
    /// `get-stats` stops listing a stream a few seconds after its last RTP packet. nil without an
    /// rtpbin. Off the pool (the sessions' locks).
    public func senderReports() async -> [RTCPSenderReport]? {
        let element = self.element
        return await OffPool.run {
            var buffer = [SfbSenderReport](repeating: SfbSenderReport(), count: 512)
            let n = buffer.withUnsafeMutableBufferPointer { sfb_webrtc_sender_reports(element.pointer, $0.baseAddress, Int32($0.count)) }
            guard n >= 0 else { return nil }
            return buffer.prefix(Int(min(n, Int32(buffer.count)))).map {
                RTCPSenderReport(ssrc: $0.ssrc, ntpTime: Double($0.ntp_time >> 32) + Double($0.ntp_time & 0xffff_ffff) / 4_294_967_296,
                                 packets: $0.packets)
            }
        }
    }
}
