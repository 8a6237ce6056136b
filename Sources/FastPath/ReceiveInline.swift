internal import CGStreamer
internal import CDirectRTP
public import GStreamerKit

/// Received packets go from webrtcbin's nicesrc to its DTLS/SRTP decoder in nicesrc's own
/// thread, skipping the transport receive bin's queue and its thread hand-off per packet,
/// whenever webrtcbin is not holding the receive side (before ICE connects, or after it is
/// lost, the queue takes them as before, so nicesrc keeps answering STUN). A packet never
/// overtakes one the queue still holds. Dropping this removes the shortcut. CDirectRTP.h.
///
/// What changes: everything after the decoder (rtpbin, the depayloaders, the bot's own
/// probes) runs in nicesrc's thread, so a slow consumer there delays STUN answers; meant for
/// load subscribers, whose per-packet work is short and never waits.
public final class ReceiveInline: @unchecked Sendable {
    // @unchecked: the C object's counters are atomics; the rest is set once.
    private let pointer: OpaquePointer

    /// Adds the shortcut to `webrtc`'s only transport; call after the remote description.
    /// Throws why it cannot (the queue then stays in the path).
    public init(_ webrtc: WebRTCBin) throws(GStreamerError) {
        var why: UnsafePointer<CChar>?
        guard let p = sfb_receive_inline_new(webrtc.element.gstElement, &why) else {
            throw .webrtc("inline receive: " + (why.map { String(cString: $0) } ?? "unknown reason"))
        }
        pointer = p
    }

    deinit { sfb_receive_inline_close(pointer) }

    /// Packets given to the decoder directly, and packets left to the queue.
    public var counts: (inline: UInt64, queued: UInt64) {
        var i: guint64 = 0, q: guint64 = 0
        sfb_receive_inline_counts(pointer, &i, &q)
        return (UInt64(i), UInt64(q))
    }
}
