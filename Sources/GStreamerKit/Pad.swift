internal import CGStreamer

/// Owns exactly one reference to a GstPad, dropped in deinit.
public final class Pad: @unchecked Sendable {
    // @unchecked: GstPad reference counting, linking and probes are thread-safe.
    let pointer: UnsafeMutablePointer<GstPad>

    /// Takes over a reference the caller hands over: a full one (`gst_element_get_static_pad`),
    /// or a floating one (`gst_pad_new`, `gst_ghost_pad_new`), which is sunk.
    init(takingOwnership pointer: UnsafeMutablePointer<GstPad>) {
        if g_object_is_floating(UnsafeMutableRawPointer(pointer)) != 0 {
            gst_object_ref_sink(UnsafeMutableRawPointer(pointer))
        }
        self.pointer = pointer
    }

    /// Takes a reference of its own to a pad it was only lent (e.g. `pad-added`'s argument);
    /// a floating reference stays the caller's.
    init(retaining pointer: UnsafeMutablePointer<GstPad>) {
        gst_object_ref(UnsafeMutableRawPointer(pointer))
        self.pointer = pointer
    }
    deinit { gst_object_unref(UnsafeMutableRawPointer(pointer)) }

    public var name: String { objectName(pointer.gstObject()) }

    /// `gst_pad_link`; throws with GStreamer's reason (e.g. caps do not match).
    public func link(to sink: Pad) throws(GStreamerError) {
        let r = gst_pad_link(pointer, sink.pointer)
        guard r == GST_PAD_LINK_OK else {
            throw .linkFailed("\(name) → \(sink.name): \(String(cString: gst_pad_link_get_name(r)))")
        }
    }

    /// The pad's current caps as a string, if negotiated.
    public var caps: String? {
        guard let c = gst_pad_get_current_caps(pointer) else { return nil }
        defer { gst_mini_object_unref(UnsafeMutableRawPointer(c).assumingMemoryBound(to: GstMiniObject.self)) }
        return takeGString(gst_caps_to_string(c))
    }

    /// Sends a force-key-unit request upstream from this pad: an encoder upstream encodes a
    /// keyframe; on a receive path webrtcbin's RTP session turns it into an RTCP PLI to the
    /// sender (a PLI, as WebRTC receivers send, rather than a FIR: all-headers false).
    @discardableResult
    public func requestKeyFrame() -> Bool {
        let event = gst_event_new_custom(GST_EVENT_CUSTOM_UPSTREAM, gst_structure_new_from_string("GstForceKeyUnit, all-headers=(boolean)false"))
        // An upstream event leaves a sink pad with push_event; a src pad handles it with send_event.
        return (gst_pad_get_direction(pointer) == GST_PAD_SINK ? gst_pad_push_event(pointer, event) : gst_pad_send_event(pointer, event)) != 0
    }

    /// Shifts the running time of everything passing this pad by `seconds` (`gst_pad_set_offset`).
    public func setOffset(seconds: Double) { gst_pad_set_offset(pointer, gint64(seconds * 1e9)) }

    /// The pad this one is linked to (`gst_pad_get_peer`), if any.
    public var peer: Pad? {
        gst_pad_get_peer(pointer).map { Pad(takingOwnership: $0) }
    }

    /// `gst_pad_unlink` from whatever it is linked to.
    public func unlink() {
        guard let peer = gst_pad_get_peer(pointer) else { return }
        if gst_pad_get_direction(pointer) == GST_PAD_SRC { gst_pad_unlink(pointer, peer) } else { gst_pad_unlink(peer, pointer) }
        gst_object_unref(UnsafeMutableRawPointer(peer))
    }

    /// Pushes end-of-stream into this (sink) pad, so the elements after it finish their output.
    @discardableResult
    public func sendEndOfStream() -> Bool { gst_pad_send_event(pointer, gst_event_new_eos()) != 0 }
}
