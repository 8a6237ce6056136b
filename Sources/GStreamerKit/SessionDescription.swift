internal import CGStreamer

/// An SDP offer or answer as text, the form signalling carries it in.
public struct SessionDescription: Sendable, Equatable {
    public enum Kind: String, Sendable { case offer, answer }
    public var kind: Kind
    public var sdp: String

    public init(kind: Kind, sdp: String) {
        self.kind = kind
        self.sdp = sdp
    }

    /// A new GstWebRTCSessionDescription the caller owns.
    func makeGst() throws(GStreamerError) -> UnsafeMutablePointer<GstWebRTCSessionDescription> {
        var message: UnsafeMutablePointer<GstSDPMessage>?
        guard gst_sdp_message_new_from_text(sdp, &message) == GST_SDP_OK, let message else {
            throw .sdp("GStreamer cannot parse the \(kind.rawValue)")
        }
        let type: GstWebRTCSDPType = kind == .offer ? GST_WEBRTC_SDP_TYPE_OFFER : GST_WEBRTC_SDP_TYPE_ANSWER
        return gst_webrtc_session_description_new(type, message)  // takes the message
    }

    init?(gst: UnsafePointer<GstWebRTCSessionDescription>) {
        guard let text = takeGString(gst_sdp_message_as_text(gst.pointee.sdp)) else { return nil }
        self.init(kind: gst.pointee.type == GST_WEBRTC_SDP_TYPE_OFFER ? .offer : .answer, sdp: text)
    }
}
