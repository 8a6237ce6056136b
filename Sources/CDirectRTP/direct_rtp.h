// The direct sender's state, shared by direct_rtp.c (send) and direct_reports.c (RTCP).
#ifndef SFB_DIRECT_RTP_H
#define SFB_DIRECT_RTP_H
#include "CDirectRTP.h"
#include <sys/socket.h>
#include <nice/agent.h>
#include <srtp2/srtp.h>

// SSRCs one sender protects: a bot's audio and video (and room for RTX and simulcast).
#define SFB_DIRECT_SSRCS 4

struct SfbDirectRTP {
    gint refs;
    // The srtp session, the claimed SSRC and the route (one pushing thread in practice).
    pthread_mutex_t lock;
    srtp_t session;
    SfbSrtpGuard *guard;
    NiceAgent *agent;
    guint stream, component;
    // The route: our own copy (dup) of the selected pair's UDP socket and the remote address,
    // sent to with sendto(2) under the lock (libnice's send takes the agent lock and goes
    // through GSocket: 6 % of a bot's CPU). Re-read after libnice says the pair or the
    // component's state changed; fd -1: no plain UDP route (relayed, not ready), nice_agent_send
    // decides. Owning the copy means libnice closing its socket cannot make us write to a
    // descriptor reused for something else.
    gint route_stale;
    int fd;
    struct sockaddr_storage to;
    socklen_t to_len;
    gulong on_pair, on_state;
    guint64 packets, payload_bytes, dropped, refused;   // __atomic, relaxed: counters only
    guint64 through_agent;                              // sent by nice_agent_send (relayed)
    // The SSRCs sent (claimed from the guard; audio and video) and what the peer's receiver
    // reports say of them (rtpsession never saw them, so it ignores those report blocks).
    // ssrcs[i] is written before n_ssrcs grows (release), under the lock; readers acquire.
    guint32 ssrcs[SFB_DIRECT_SSRCS];
    gint n_ssrcs;
    guint64 reports;                     // __atomic from here on
    gint64 cumulative_lost[SFB_DIRECT_SSRCS];
    guint32 jitter;
    // Keyframe requests (PLI, FIR) about our SSRCs, and how they were answered: by the next
    // IDR sent on a video pad (direct_video.c). pending_since: monotonic µs, 0 if none pending.
    guint64 keyframe_requests, keyframe_answers, keyframes_sent, answer_us_max;
    gint64 pending_since;
    // NACK answers (direct_nack.c): the video packets sent last, protected (made on the first,
    // under the lock), and what NACKs asked and got. answer_nacks: __atomic, 1 unless turned off.
    SfbSentHistory *history;
    gint answer_nacks;
    guint64 nacks, nacked, retransmitted, nack_unavailable;   // __atomic
};

// The history's size: about 0.8 s of video at 600 kbit/s, IDRs included (docs/performance.md).
#define SFB_HISTORY_BYTES (64 * 1024)
#define SFB_HISTORY_SLOTS 256

// The largest RTP packet sent; larger ones are dropped and counted (an MTU-sized packet fits).
#define SFB_MAX_RTP 1500
// Packets of one frame sent with one sendmmsg (a larger frame takes more calls).
#define SFB_FRAME_BATCH 8

// Is `ssrc` ours to protect? Claims it on its first packet: one srtpenc was given is not ours,
// nor one past the SSRCs a sender keeps. Called with the lock held.
gboolean sfb_direct_owns_locked(SfbDirectRTP *d, guint32 ssrc);

// Protects an RTP packet in place (`*len` grows by the trailer); called with the lock held.
gboolean sfb_direct_protect_locked(SfbDirectRTP *d, guint8 *packet, int *len);

// Counts an IDR sent, answering the keyframe requests pending (direct_video.c).
void sfb_direct_keyframe_sent(SfbDirectRTP *d);

// Sends one RTP buffer (protect, then sendto or libnice); TRUE if it left. `keep`: into the
// history for NACKs (video).
gboolean sfb_direct_send_one(SfbDirectRTP *d, GstBuffer *buffer, gboolean keep);

// Sends a protected packet on the current route; called with the lock held.
gboolean sfb_direct_transmit_locked(SfbDirectRTP *d, const guint8 *packet, gsize len);
// Sends `n` protected packets (a frame's): one sendmmsg on a plain UDP route, else one by one
// through libnice. Returns how many went out (`went[i]`: whether packet i did); called with the
// lock held.
guint sfb_direct_transmit_many_locked(SfbDirectRTP *d, guint8 *const *packets, const gsize *lens, guint n, gboolean *went);

// Answers the NACKs in a compound RTCP packet about the SSRCs sent (direct_nack.c).
void sfb_direct_answer_nacks(SfbDirectRTP *d, const guint8 *rtcp, gsize size);

// Runs `each` on the probe's buffer, or on every buffer of its list.
void sfb_direct_for_each_buffer(GstPadProbeInfo *info, SfbDirectRTP *d, void (*each)(SfbDirectRTP *, GstBuffer *));
void sfb_direct_release(gpointer data);

#endif
