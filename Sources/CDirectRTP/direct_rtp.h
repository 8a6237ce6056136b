// The direct sender's state, shared by direct_rtp.c (send) and direct_reports.c (RTCP).
#ifndef SFB_DIRECT_RTP_H
#define SFB_DIRECT_RTP_H
#include "CDirectRTP.h"
#include <sys/socket.h>
#include <nice/agent.h>
#include <srtp2/srtp.h>

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
    // The SSRC sent (claimed from the guard) and what the peer's receiver reports say of it
    // (rtpsession never saw it, so it ignores those report blocks): __atomic.
    guint32 ssrc;
    gint ssrc_known;
    guint64 reports;
    gint64 cumulative_lost;
    guint32 jitter;
};

// Runs `each` on the probe's buffer, or on every buffer of its list.
void sfb_direct_for_each_buffer(GstPadProbeInfo *info, SfbDirectRTP *d, void (*each)(SfbDirectRTP *, GstBuffer *));
void sfb_direct_release(gpointer data);

#endif
