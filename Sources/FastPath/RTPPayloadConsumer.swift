internal import CGStreamer
internal import CGStreamerShims
public import GStreamerKit

private final class PayloadConsumerBox: Sendable {
    let transform: any FrameTransform
    init(_ t: any FrameTransform) { transform = t }
}

extension Pad {
    /// Runs `transform` on the payload of every RTP packet leaving (src pad) or entering (sink
    /// pad) this pad, discards what it writes, and drops the packet: for streams whose RTP
    /// payload is the whole frame (Opus), where only the transform's side effects (counting,
    /// opening) matter. No depayloader, sink or output buffer per packet.
    public func addRTPPayloadConsumer(_ transform: any FrameTransform) -> PadProbe {
        let box = Unmanaged.passRetained(PayloadConsumerBox(transform)).toOpaque()
        let mask = GstPadProbeType(rawValue: GST_PAD_PROBE_TYPE_BUFFER.rawValue | GST_PAD_PROBE_TYPE_BUFFER_LIST.rawValue)
        let id = gst_pad_add_probe(gstPad, mask, { _, info, data in
            guard let info, let data else { return GST_PAD_PROBE_OK }
            let t = Unmanaged<PayloadConsumerBox>.fromOpaque(data).takeUnretainedValue().transform
            if info.pointee.type.rawValue & GST_PAD_PROBE_TYPE_BUFFER.rawValue != 0 {
                if let buffer = sfb_probe_info_buffer(info) { Pad.consumePayload(of: buffer, with: t) }
            } else if let list = gst_pad_probe_info_get_buffer_list(info) {
                for i in 0..<gst_buffer_list_length(list) {
                    if let buffer = gst_buffer_list_get(list, i) { Pad.consumePayload(of: buffer, with: t) }
                }
            }
            return GST_PAD_PROBE_DROP
        }, box, { data in
            if let data { Unmanaged<PayloadConsumerBox>.fromOpaque(data).release() }
        })
        return PadProbe(pad: self, probeID: UInt(id))
    }

    private static func consumePayload(of buffer: UnsafeMutablePointer<GstBuffer>, with t: any FrameTransform) {
        var map = GstMapInfo()
        guard gst_buffer_map(buffer, &map, GST_MAP_READ) != 0 else { return }
        defer { gst_buffer_unmap(buffer, &map) }
        let packet = UnsafeRawBufferPointer(start: map.data, count: Int(map.size))
        // rtpbin has checked the header before this pad; a packet that still does not parse is not counted.
        guard let range = RTPPayload.range(in: packet, packet: 0..<packet.count) else { return }
        let payload = UnsafeRawBufferPointer(rebasing: packet[range])
        let capacity = max(0, t.outputCapacity(for: payload))
        // On the stack for frames of audio size: nothing allocated per packet.
        withUnsafeTemporaryAllocation(byteCount: max(1, capacity), alignment: 16) { output in
            _ = t.transform(payload, into: UnsafeMutableRawBufferPointer(rebasing: output[0..<capacity]))
        }
    }
}
