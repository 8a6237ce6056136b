// Shortcuts past webrtcbin's per-packet work, for load bots (FastPath, docs/performance.md).
//
// A send path for RTP that skips webrtcbin's send chain: each packet leaving a payloader is
// protected with libsrtp (the keys webrtcbin's DTLS put in its srtpenc) and handed to the
// ICE agent webrtcbin's nicesink sends with. Used by load publishers, where the 21 pad pushes
// and rtpsession's per-packet work were most of a sent packet's CPU. It could go if webrtcbin
// ever got a cheap send path of its own.
#ifndef CDIRECTRTP_H
#define CDIRECTRTP_H
#define GST_USE_UNSTABLE_API 1
#include <gst/gst.h>
// Our own locks are pthread mutexes, not GMutex: ThreadSanitizer (`make tsan`) intercepts pthread
// but cannot see GLib's futex-based GMutex, and would report what the lock guards as races.
#include <pthread.h>

typedef struct SfbDirectRTP SfbDirectRTP;

/// Reads the SRTP keys and cipher from `webrtcbin`'s only srtpenc and the ICE agent, stream
/// and component from its only nicesink, and guards srtpenc (sfb_srtp_guard_new); call once
/// DTLS is connected. NULL with `*why` (a static string) if that is not possible: not bundled
/// into one transport, no key yet, a cipher this path does not know, libsrtp or libnice not loaded.
SfbDirectRTP *sfb_direct_rtp_new(GstElement *webrtcbin, const char **why);

/// Adds a probe on `pad` (a payloader's src pad) that sends every RTP buffer (and buffer
/// list) itself and drops it. Returns the probe's id (0 on failure); the caller removes it.
/// A packet whose SSRC srtpenc has protected is never sent: see sfb_direct_rtp_refused.
gulong sfb_direct_rtp_attach(SfbDirectRTP *sender, GstPad *pad);

/// Like sfb_direct_rtp_attach, for a video payloader (H.264, RFC 6184): an IDR leaving answers
/// the keyframe requests read since the last one (see sfb_direct_rtp_keyframes).
gulong sfb_direct_rtp_attach_video(SfbDirectRTP *sender, GstPad *pad);

/// Keyframe requests (PLI, FIR) about the SSRCs sent, read with the reports
/// (sfb_direct_rtp_watch_reports); how many an IDR sent answered; IDRs sent; and the longest a
/// request waited for its answer.
void sfb_direct_rtp_keyframes(SfbDirectRTP *sender, guint64 *requests, guint64 *answered, guint64 *sent, guint64 *slowestAnswerMicroseconds);

/// Packets sent, their RTP payload bytes, and packets dropped (too large, SRTP or ICE failed,
/// or refused).
void sfb_direct_rtp_counts(SfbDirectRTP *sender, guint64 *packets, guint64 *payloadBytes, guint64 *dropped);

/// Packets not sent because srtpenc had already protected their SSRC with the same key.
guint64 sfb_direct_rtp_refused(SfbDirectRTP *sender);

/// Of the packets sent, those handed to libnice (nice_agent_send) rather than written with
/// sendto: the selected pair is relayed (libnice frames them for the TURN server: ChannelData
/// or Send indication), TCP, or not ready yet.
guint64 sfb_direct_rtp_through_agent(SfbDirectRTP *sender);

/// Watches the RTCP webrtcbin decrypts (its srtpdec's rtcp_src pad) for the peer's receiver
/// report blocks (and keyframe requests) about the SSRCs this sender sends: rtpsession ignores them, never having seen
/// that SSRC. Returns the probe's id and, in `*pad`, the pad with a reference the caller owns
/// (and removes the probe from); 0 (and NULL) if webrtcbin has no srtpdec.
gulong sfb_direct_rtp_watch_reports(SfbDirectRTP *sender, GstElement *webrtcbin, GstPad **pad);

/// Report blocks read so far, the newest cumulative loss summed over the SSRCs sent, and the
/// first SSRC's interarrival jitter (in its RTP timestamp units).
void sfb_direct_rtp_reports(SfbDirectRTP *sender, guint64 *reports, gint64 *cumulativeLost, guint32 *jitter);

/// The owner's end: stops listening to the ICE agent and gives up the owner's reference (the
/// probes hold their own until they are removed).
void sfb_direct_rtp_close(SfbDirectRTP *sender);

/// Drops one reference; the last closes the sender's copy of the ICE socket.
void sfb_direct_rtp_unref(SfbDirectRTP *sender);

// One SRTP key, one owner per SSRC. A probe on every RTP input of `srtpenc` (and on inputs it
// gets later) records the SSRCs srtpenc is given and drops packets of SSRCs the direct sender
// claimed; SSRCs `rtpsession` (may be NULL) already sent from count as srtpenc's. The probes
// stay as long as srtpenc's pads, that is as long as its key: removing them earlier would let
// a claimed SSRC reach srtpenc.
typedef struct SfbSrtpGuard SfbSrtpGuard;
SfbSrtpGuard *sfb_srtp_guard_new(GstElement *srtpenc, GstElement *rtpsession);

/// Claims `ssrc` for the direct sender: FALSE if srtpenc has been given it (or more SSRCs than
/// the guard tracks), in which case it must not be protected with this key.
gboolean sfb_srtp_guard_claim(SfbSrtpGuard *guard, guint32 ssrc);

/// Packets of claimed SSRCs kept from srtpenc.
guint64 sfb_srtp_guard_blocked(SfbSrtpGuard *guard);

void sfb_srtp_guard_unref(SfbSrtpGuard *guard);

// The parsers the direct path reads packets with (rtp_parse.c; FuzzRTPHeader fuzzes them).

/// An RTP packet's payload length, RFC 3550 §5.1 (header, CSRCs, extension and padding off);
/// 0 if it is empty or the packet is malformed.
gsize sfb_rtp_payload_length(const guint8 *packet, gsize size);

/// Receiver report blocks (RFC 3550 §6.4, in SR and RR packets of a compound RTCP packet)
/// about `ssrc`: how many there are; the last one's cumulative loss and jitter go to
/// `*cumulativeLost` and `*jitter` (untouched if there is none). Stops at a truncated packet.
guint sfb_rtcp_report_blocks(const guint8 *packet, gsize size, guint32 ssrc, gint64 *cumulativeLost, guint32 *jitter);

// The receive side's shortcut: packets go from webrtcbin's nicesrc to its dtlssrtpdec in
// nicesrc's thread, skipping the transport receive bin's queue (a thread hand-off per packet)
// whenever webrtcbin is not holding the receive side. Used by load subscribers.
typedef struct SfbReceiveInline SfbReceiveInline;

/// Adds the shortcut to `webrtcbin`'s only transport; call once its transports exist (after
/// the remote description). NULL with `*why` (a static string) if the receive side is not
/// the one this knows, or there is more than one transport.
SfbReceiveInline *sfb_receive_inline_new(GstElement *webrtcbin, const char **why);

/// Packets given to dtlssrtpdec directly, and packets left to the queue (until the queue has
/// delivered what it was given, and while webrtcbin holds the receive side).
void sfb_receive_inline_counts(SfbReceiveInline *shortcut, guint64 *inlinePackets, guint64 *queuedPackets);

/// Removes the shortcut's probes (packets take the queue again) and drops the owner's reference.
void sfb_receive_inline_close(SfbReceiveInline *shortcut);

/// Does this H.264 RTP payload (RFC 6184) carry the start of an IDR slice: a NAL unit of type 5,
/// in a STAP-A, or the first fragment of an FU-A?
gboolean sfb_h264_rtp_starts_idr(const guint8 *payload, gsize size);

/// Keyframe requests about `ssrc` in a compound RTCP packet: PLIs (RFC 4585) naming it as media
/// source, and FIR entries (RFC 5104) naming it. Stops at a truncated packet.
guint sfb_rtcp_keyframe_requests(const guint8 *packet, gsize size, guint32 ssrc);

/// Packets a generic NACK (RFC 4585 §6.2.1: RTPFB, FMT 1) about `ssrc` in a compound RTCP
/// packet says were lost: how many it lists (each PID and the BLP bits set); the first
/// `capacity` go to `seqs`. `*messages` (may be NULL) grows by the NACKs about `ssrc`. Stops at a
/// truncated packet.
guint sfb_rtcp_nacked(const guint8 *packet, gsize size, guint32 ssrc, guint16 *seqs, guint capacity, guint *messages);

// The protected packets a direct sender sent last (sent_history.c), kept to answer NACKs with
// the same bytes: `bytes` of them at most, found by sequence number through `slots` slots
// (sequence number modulo `slots`). Not locked: the sender's lock guards it.
typedef struct SfbSentHistory SfbSentHistory;
SfbSentHistory *sfb_sent_history_new(gsize bytes, guint slots);
void sfb_sent_history_free(SfbSentHistory *history);
/// Keeps a copy of `packet` under `seq`, writing over the oldest bytes when full.
void sfb_sent_history_keep(SfbSentHistory *history, guint16 seq, const guint8 *packet, gsize len);
/// The packet kept under `seq` and its length; NULL if it was never kept or has been written over.
const guint8 *sfb_sent_history_find(const SfbSentHistory *history, guint16 seq, gsize *len);
/// Bytes it holds allocated.
gsize sfb_sent_history_footprint(const SfbSentHistory *history);

/// NACKs about the SSRCs sent and how they were answered: NACK messages read, packets they asked
/// for, packets sent again from the history (video only), and packets asked for while answering
/// that it did not hold (written over, or audio's: no history is kept for audio).
void sfb_direct_rtp_nacks(SfbDirectRTP *sender, guint64 *nacks, guint64 *requested, guint64 *retransmitted, guint64 *unavailable);

/// Answers NACKs (the default) or only counts them.
void sfb_direct_rtp_answer_nacks(SfbDirectRTP *sender, gboolean answer);

// The frame path (direct_frames.c, packetize.c): a sealed frame straight from the fan-out to
// RTP, SRTP and the socket, with no payloader, pad or GstBuffer per publisher. A track takes
// its payloader's place after negotiation: the payloader's SSRC, payload type, MTU, sequence
// (continued) and timestamp base, and for H.264 its SPS/PPS, so the packets are those it would
// have made. The payloader stays in the pipeline (webrtcbin negotiated with its caps) but is
// fed nothing once the track sends.

/// Where a packetizer puts each RTP payload it makes (`payload` is reused for the next one).
typedef void (*SfbPayloadEmit)(void *ctx, const guint8 *payload, gsize len, gboolean marker);

#define SFB_H264_MAX_SETS 16
/// What rtph264pay sends an avc stream with: the MTU (RTP header and payload), the NAL length
/// size, and the parameter sets (SPS then PPS, from the caps' codec_data) sent before each IDR.
typedef struct {
    guint mtu;
    guint nal_length_size;
    guint n_sets;
    gsize set_offset[SFB_H264_MAX_SETS], set_len[SFB_H264_MAX_SETS], used;
    guint8 bytes[1024];
} SfbH264Params;

/// Reads codec_data (an AVCDecoderConfigurationRecord) into `params`, keeping its `mtu`; FALSE
/// if it is malformed or holds more than the struct keeps.
gboolean sfb_h264_params_parse(SfbH264Params *params, const guint8 *avcc, gsize size);

/// Cuts one access unit (avc: length-prefixed NAL units) into RTP payloads as rtph264pay does
/// with aggregate-mode=zero-latency and config-interval=-1; `out` must hold mtu - 12 bytes.
/// Returns the payloads emitted.
guint sfb_h264_packetize(const SfbH264Params *params, const guint8 *au, gsize size, guint8 *out, SfbPayloadEmit emit, void *ctx);

typedef struct SfbDirectTrack SfbDirectTrack;

/// A track of `sender` in `payloader`'s place (rtpopuspay, or rtph264pay with `video`), read
/// from the payloader now; its SSRC is claimed from the SRTP guard. NULL with `*why` (static).
SfbDirectTrack *sfb_direct_track_new(SfbDirectRTP *sender, GstElement *payloader, gboolean video, const char **why);

/// Packetizes one sealed frame (Opus: one packet; H.264: an avc access unit) with the RTP
/// timestamp of `running_time` (ns; GST_CLOCK_TIME_NONE: the previous frame's), protects and
/// sends each packet; video's go to the NACK history. Returns the packets sent. Called from one
/// thread at a time (the fan-out's).
guint sfb_direct_track_send(SfbDirectTrack *track, const guint8 *frame, gsize size, guint64 running_time);

void sfb_direct_track_free(SfbDirectTrack *track);

#endif
