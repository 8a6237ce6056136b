// Shortcuts past webrtcbin's per-packet work, for load bots.
//
// A send path for RTP that skips webrtcbin's send chain: each packet leaving a payloader is
// protected with libsrtp (the keys webrtcbin's DTLS put in its srtpenc) and handed to the
// ICE agent webrtcbin's nicesink sends with. Used by load publishers, where the 21 pad pushes
// and rtpsession's per-packet work were most of a sent packet's CPU (docs/performance.md).
#ifndef CDIRECTRTP_H
#define CDIRECTRTP_H
#define GST_USE_UNSTABLE_API 1
#include <gst/gst.h>

typedef struct SfbDirectRTP SfbDirectRTP;

/// Reads the SRTP keys and cipher from `webrtcbin`'s only srtpenc and the ICE agent, stream
/// and component from its only nicesink; call once DTLS is connected. NULL with `*why` (a
/// static string) if that is not possible: not bundled into one transport, no key yet, a
/// cipher this path does not know, libsrtp or libnice not loaded.
SfbDirectRTP *sfb_direct_rtp_new(GstElement *webrtcbin, const char **why);

/// Adds a probe on `pad` (a payloader's src pad) that sends every RTP buffer (and buffer
/// list) itself and drops it. Returns the probe's id (0 on failure). Add it before the first
/// packet reaches webrtcbin: libsrtp then starts the stream as srtpenc would have.
gulong sfb_direct_rtp_attach(SfbDirectRTP *sender, GstPad *pad);

/// Packets sent, their RTP payload bytes, and packets dropped (too large, SRTP or ICE failed).
void sfb_direct_rtp_counts(SfbDirectRTP *sender, guint64 *packets, guint64 *payloadBytes, guint64 *dropped);

/// Watches the RTCP webrtcbin decrypts (its srtpdec's rtcp_src pad) for the peer's receiver
/// report blocks about the SSRC this sender sends: rtpsession ignores them, never having seen
/// that SSRC. Returns the probe's id and, in `*pad`, the pad with a reference the caller owns;
/// 0 (and NULL) if webrtcbin has no srtpdec.
gulong sfb_direct_rtp_watch_reports(SfbDirectRTP *sender, GstElement *webrtcbin, GstPad **pad);

/// Report blocks read so far, and the newest one's cumulative loss and interarrival jitter
/// (in RTP timestamp units).
void sfb_direct_rtp_reports(SfbDirectRTP *sender, guint64 *reports, gint64 *cumulativeLost, guint32 *jitter);

/// The owner's end: stops listening to the ICE agent and gives up the owner's reference (the
/// probe holds its own until it is removed).
void sfb_direct_rtp_close(SfbDirectRTP *sender);

/// Drops one reference (the probe's and the agent handlers' are dropped by GLib).
void sfb_direct_rtp_unref(SfbDirectRTP *sender);

// The receive side's shortcut: packets go from webrtcbin's nicesrc to its dtlssrtpdec in
// nicesrc's thread, skipping the transport receive bin's queue (a thread hand-off per packet)
// whenever webrtcbin is not holding the receive side. Used by load subscribers.
typedef struct SfbReceiveInline SfbReceiveInline;

/// Adds the shortcut to `webrtcbin`'s only transport; call once its transports exist (after
/// the remote description). NULL with `*why` (a static string) if the receive side is not
/// the one this knows, or there is more than one transport.
SfbReceiveInline *sfb_receive_inline_new(GstElement *webrtcbin, const char **why);

/// Packets given to dtlssrtpdec directly, and packets left to the queue (before the first
/// delivery through it, and while webrtcbin held the receive side).
void sfb_receive_inline_counts(SfbReceiveInline *shortcut, guint64 *inlinePackets, guint64 *queuedPackets);

/// Drops the owner's reference (the probes' are dropped by GStreamer).
void sfb_receive_inline_unref(SfbReceiveInline *shortcut);

#endif
