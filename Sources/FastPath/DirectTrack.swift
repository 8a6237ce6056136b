internal import CGStreamer
internal import CDirectRTP
public import GStreamerKit

/// One track of a `DirectRTPSender` sent from whole sealed frames, in its payloader's place:
/// each frame is packetized as the payloader would (Opus: one packet; H.264: rtph264pay's
/// STAP-A/FU-A with the parameter sets before each IDR), protected and sent in C, with no pad,
/// GstBuffer or payloader per packet (CDirectRTP.h, "The frame path"). The payloader's SSRC,
/// payload type, MTU, sequence (continued) and timestamp base are read when it is made: make it
/// once negotiation is done and nothing the payloader made has been sent.
public final class DirectTrack: @unchecked Sendable {
    // @unchecked: `send` is called from one fan-out thread at a time; the sender's state it
    // shares is locked in C.
    private let pointer: OpaquePointer

    public init(_ sender: DirectRTPSender, payloader: Element, video: Bool) throws(GStreamerError) {
        var why: UnsafePointer<CChar>?
        guard let p = sfb_direct_track_new(sender.pointer, payloader.gstElement, video ? 1 : 0, &why) else {
            throw .webrtc("direct frames: " + (why.map { String(cString: $0) } ?? "unknown reason"))
        }
        pointer = p
    }

    deinit { sfb_direct_track_free(pointer) }

    /// Sends one sealed frame stamped with `runningTime` (ns, `UInt64.max`: the last frame's
    /// RTP time); returns the packets sent.
    @discardableResult
    public func send(_ frame: UnsafeRawBufferPointer, runningTime: UInt64) -> Int {
        guard let base = frame.baseAddress else { return 0 }
        return Int(sfb_direct_track_send(pointer, base.assumingMemoryBound(to: guint8.self), gsize(frame.count), guint64(runningTime)))
    }
}
