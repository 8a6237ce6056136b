internal import CGStreamer
internal import CDirectRTP
public import GStreamerKit

/// Sends a payloader's RTP past webrtcbin's send chain: SRTP with the keys webrtcbin's DTLS
/// negotiated, straight to its ICE agent (CDirectRTP.h). webrtcbin keeps ICE, DTLS and RTCP.
///
/// What this gives up: webrtcbin's rtpsession never sees these packets, so its outbound
/// counters stay at 0 (read `counts` instead), it ignores the peer's receiver reports about
/// them (read `reports`, from `watchReports`), its RTCP carries no sender report for them (so
/// no round-trip time). Keyframe requests (PLI, FIR) are read with the reports and answered by
/// the next IDR the video pad sends (`keyframes`); NACKs about video are answered with the same
/// SRTP packet again, from a history of the last 64 KiB sent (`nacks`; no RTX). It is
/// meant for load publishers, audio and video on one sender (one SRTP session, every SSRC
/// claimed from the guard).
public final class DirectRTPSender: @unchecked Sendable {
    // @unchecked: the C object's counters are atomics and its session is locked.
    let pointer: OpaquePointer

    /// Reads keys and transport from `webrtc`; call once its DTLS is connected. Throws why it
    /// cannot (the caller keeps webrtcbin's path). From here on webrtcbin's srtpenc and this
    /// sender never protect one SSRC both: packets of an SSRC webrtcbin already sent are not
    /// sent here (`refused`), and webrtcbin drops those of an SSRC sent here.
    public init(_ webrtc: WebRTCBin) throws(GStreamerError) {
        var why: UnsafePointer<CChar>?
        guard let p = sfb_direct_rtp_new(webrtc.element.gstElement, &why) else {
            throw .webrtc("direct RTP: " + (why.map { String(cString: $0) } ?? "unknown reason"))
        }
        pointer = p
    }

    deinit { sfb_direct_rtp_close(pointer) }

    /// Sends every RTP buffer leaving `pad` this way and drops it there. The probe keeps
    /// this sender's C state alive until it is removed.
    public func attach(to pad: Pad) throws(GStreamerError) -> PadProbe {
        let id = sfb_direct_rtp_attach(pointer, pad.gstPad)
        guard id != 0 else { throw .linkFailed("direct RTP: cannot probe \(pad.name)") }
        return PadProbe(pad: pad, probeID: UInt(id))
    }

    /// Like `attach(to:)`, for an H.264 payloader: an IDR leaving answers the keyframe requests
    /// read since the last one.
    public func attachVideo(to pad: Pad) throws(GStreamerError) -> PadProbe {
        let id = sfb_direct_rtp_attach_video(pointer, pad.gstPad)
        guard id != 0 else { throw .linkFailed("direct RTP: cannot probe \(pad.name)") }
        return PadProbe(pad: pad, probeID: UInt(id))
    }

    /// Keyframe requests (PLI, FIR) Janus sent about what this sends (read by `watchReports`),
    /// how many an IDR sent since answered, IDRs sent, and the longest a request waited.
    public var keyframes: (requests: UInt64, answered: UInt64, sent: UInt64, slowestAnswer: Duration) {
        var r: guint64 = 0, a: guint64 = 0, s: guint64 = 0, us: guint64 = 0
        sfb_direct_rtp_keyframes(pointer, &r, &a, &s, &us)
        return (UInt64(r), UInt64(a), UInt64(s), .microseconds(Int64(us)))
    }

    /// NACKs (RFC 4585) Janus sent about what this sends (read by `watchReports`): NACK messages,
    /// packets they asked for, packets sent again, and packets asked for while answering that
    /// the history no longer held (or audio's, which it does not keep).
    public var nacks: (messages: UInt64, requested: UInt64, retransmitted: UInt64, unavailable: UInt64) {
        var m: guint64 = 0, q: guint64 = 0, r: guint64 = 0, u: guint64 = 0
        sfb_direct_rtp_nacks(pointer, &m, &q, &r, &u)
        return (UInt64(m), UInt64(q), UInt64(r), UInt64(u))
    }

    /// Answers NACKs (the default), or only counts them (to measure what answering gives).
    public func answerNACKs(_ answer: Bool) { sfb_direct_rtp_answer_nacks(pointer, answer ? 1 : 0) }

    /// Reads the peer's receiver reports about what this sends, from the RTCP `webrtc`
    /// decrypts; nil if it has no SRTP decoder.
    public func watchReports(_ webrtc: WebRTCBin) -> PadProbe? {
        var raw: UnsafeMutablePointer<GstPad>?
        let id = sfb_direct_rtp_watch_reports(pointer, webrtc.element.gstElement, &raw)
        guard let raw else { return nil }
        let pad = Pad.takingOwnership(ofGstPad: UnsafeMutableRawPointer(raw))
        return id == 0 ? nil : PadProbe(pad: pad, probeID: UInt(id))
    }

    /// Receiver report blocks read, and the newest one's cumulative packets lost and jitter
    /// (RTP timestamp units).
    public var reports: (count: UInt64, cumulativeLost: Int64, jitter: UInt32) {
        var n: guint64 = 0, lost: gint64 = 0, jitter: guint32 = 0
        sfb_direct_rtp_reports(pointer, &n, &lost, &jitter)
        return (UInt64(n), Int64(lost), UInt32(jitter))
    }

    /// Packets not sent because webrtcbin's srtpenc had already protected their SSRC: the same
    /// key would have encrypted two packets with one keystream (the SRTP guard, CDirectRTP.h).
    public var refused: UInt64 { UInt64(sfb_direct_rtp_refused(pointer)) }

    /// Of the packets sent, those handed to libnice's agent instead of `sendto`: on a relayed
    /// pair libnice frames each for the TURN server (ChannelData or Send indication), so the
    /// direct path works through a relay at the cost of the agent's lock and GSocket.
    public var sentThroughAgent: UInt64 { UInt64(sfb_direct_rtp_through_agent(pointer)) }

    /// Packets sent, their RTP payload bytes, and packets dropped (SRTP or ICE refused them).
    public var counts: (packets: UInt64, payloadBytes: UInt64, dropped: UInt64) {
        var p: guint64 = 0, b: guint64 = 0, d: guint64 = 0
        sfb_direct_rtp_counts(pointer, &p, &b, &d)
        return (UInt64(p), UInt64(b), UInt64(d))
    }
}
