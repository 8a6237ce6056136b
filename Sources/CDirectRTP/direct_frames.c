// See CDirectRTP.h: the frame path. Per frame and publisher this is the whole send: the RTP
// header written in place, the payload cut (packetize.c), SRTP in place, a video frame's packets
// in one sendmmsg (or libnice on a relayed pair), under one take of the sender's lock. The payloader's per-buffer work, its
// pads and the probes around them (docs/performance.md, "Why sending misses 2× the limit") are
// not run.
// sendmmsg and struct mmsghdr are GNU extensions.
#define _GNU_SOURCE
#include "direct_rtp.h"
#include <string.h>

// rtph264pay's aggregate-mode enum: zero-latency.
#define AGGREGATE_ZERO_LATENCY 1

struct SfbDirectTrack {
    SfbDirectRTP *d;
    gboolean video;
    guint8 pt;
    guint32 ssrc, ts_base, last_ts;
    guint16 seq;   // the next packet's
    guint clock_rate;
    SfbH264Params h264;   // its mtu is audio's too
    guint8 (*queue)[SFB_MAX_RTP + SRTP_MAX_TRAILER_LEN];   // a video frame's protected packets (`flush`)
};

// Reads the avc stream's parameter sets and NAL length size from the payloader's sink caps.
static const char *read_h264(SfbDirectTrack *t, GstElement *pay) {
    gint interval = 0, mode = 0;
    g_object_get(pay, "config-interval", &interval, "aggregate-mode", &mode, NULL);
    if (interval != -1 || mode != AGGREGATE_ZERO_LATENCY) return "rtph264pay is not config-interval=-1 aggregate-mode=zero-latency";
    GstPad *sink = gst_element_get_static_pad(pay, "sink");
    GstCaps *caps = sink ? gst_pad_get_current_caps(sink) : NULL;
    if (sink) gst_object_unref(sink);
    if (!caps) return "rtph264pay has no caps yet";
    const GstStructure *s = gst_caps_get_structure(caps, 0);
    const char *format = gst_structure_get_string(s, "stream-format"), *alignment = gst_structure_get_string(s, "alignment");
    const GValue *v = gst_structure_get_value(s, "codec_data");
    GstBuffer *config = v && G_VALUE_HOLDS(v, GST_TYPE_BUFFER) ? gst_value_get_buffer(v) : NULL;
    const char *why = NULL;
    GstMapInfo map = GST_MAP_INFO_INIT;
    if (!format || strcmp(format, "avc") != 0 || !alignment || strcmp(alignment, "au") != 0) why = "H.264 is not avc in access units";
    else if (!config || !gst_buffer_map(config, &map, GST_MAP_READ)) why = "H.264 caps have no codec_data";
    else {
        if (!sfb_h264_params_parse(&t->h264, map.data, map.size)) why = "H.264 codec_data is malformed";
        gst_buffer_unmap(config, &map);
    }
    gst_caps_unref(caps);
    return why;
}

SfbDirectTrack *sfb_direct_track_new(SfbDirectRTP *d, GstElement *pay, gboolean video, const char **why) {
    GstStructure *stats = NULL;
    guint mtu = 0, ssrc = 0, seqnum = 0, ts_base = 0, rate = 0, pt = 0;
    g_object_get(pay, "stats", &stats, "mtu", &mtu, NULL);
    gboolean read = stats && gst_structure_get_uint(stats, "ssrc", &ssrc) && gst_structure_get_uint(stats, "seqnum", &seqnum)
        && gst_structure_get_uint(stats, "timestamp-offset", &ts_base) && gst_structure_get_uint(stats, "clock-rate", &rate)
        && gst_structure_get_uint(stats, "pt", &pt);
    if (stats) gst_structure_free(stats);
    if (!read || rate == 0 || pt > 127) { *why = "the payloader's stats have no SSRC, clock rate or payload type yet"; return NULL; }
    if (mtu < 64 || mtu > SFB_MAX_RTP) { *why = "the payloader's MTU is not one the frame path sends"; return NULL; }
    // RTP header extensions (none are offered, so none are negotiated) would be the payloader's
    // to write: with any, the payloader keeps sending.
    GValue extensions = G_VALUE_INIT;
    g_value_init(&extensions, GST_TYPE_ARRAY);
    g_object_get_property(G_OBJECT(pay), "extensions", &extensions);
    guint n_extensions = gst_value_array_get_size(&extensions);
    g_value_unset(&extensions);
    if (n_extensions > 0) { *why = "the payloader writes RTP header extensions"; return NULL; }
    SfbDirectTrack *t = g_new0(SfbDirectTrack, 1);
    t->video = video;
    t->pt = (guint8)pt;
    t->ssrc = ssrc;
    t->seq = (guint16)(seqnum + 1);
    t->ts_base = t->last_ts = ts_base;
    t->clock_rate = rate;
    const char *no = video ? read_h264(t, pay) : NULL;
    t->h264.mtu = mtu;
    if (!no) {
        pthread_mutex_lock(&d->lock);
        if (!sfb_direct_owns_locked(d, ssrc)) no = "srtpenc has sent this SSRC";
        pthread_mutex_unlock(&d->lock);
    }
    if (no) {
        g_free(t);
        *why = no;
        return NULL;
    }
    g_atomic_int_inc(&d->refs);
    t->d = d;
    return t;
}

typedef struct {
    SfbDirectTrack *t;
    guint8 *packet;   // the RTP header's place; the payload is written right after it
    guint32 ts;
    guint sent;
    // A video frame's protected packets, sent together (sfb_direct_transmit_many_locked).
    guint queued;
    gsize lens[SFB_FRAME_BATCH], payloads[SFB_FRAME_BATCH];
    gboolean idr[SFB_FRAME_BATCH];
} Frame;

guint sfb_direct_transmit_many_locked(SfbDirectRTP *d, guint8 *const *packets, const gsize *lens, guint n, gboolean *went) {
    if (n == 0) return 0;
    // The first one as any other packet: it reads the route again if it changed.
    guint ok = (went[0] = sfb_direct_transmit_locked(d, packets[0], lens[0])) ? 1 : 0, next = 1;
    if (d->fd < 0) {
        for (; next < n; next++) ok += (went[next] = sfb_direct_transmit_locked(d, packets[next], lens[next])) ? 1 : 0;
        return ok;
    }
    struct mmsghdr msgs[SFB_FRAME_BATCH];
    struct iovec iov[SFB_FRAME_BATCH];
    while (next < n) {
        guint m = MIN(n - next, SFB_FRAME_BATCH);
        for (guint i = 0; i < m; i++) {
            iov[i] = (struct iovec){ .iov_base = packets[next + i], .iov_len = lens[next + i] };
            msgs[i] = (struct mmsghdr){ .msg_hdr = { .msg_name = &d->to, .msg_namelen = d->to_len, .msg_iov = &iov[i], .msg_iovlen = 1 } };
        }
        int r = sendmmsg(d->fd, msgs, m, MSG_DONTWAIT);
        // The first datagram refused (a full socket buffer): it is dropped, as sendto's was, and
        // the rest of the frame still tried.
        if (r <= 0) { went[next++] = FALSE; continue; }
        for (int i = 0; i < r; i++) went[next + (guint)i] = TRUE;
        ok += (guint)r;
        next += (guint)r;
    }
    return ok;
}

typedef guint8 QueuedPacket[SFB_MAX_RTP + SRTP_MAX_TRAILER_LEN];

// Counts one packet's fate, as sendto's was.
static void counted(Frame *f, gboolean sent, gsize payload, gboolean idr) {
    SfbDirectRTP *d = f->t->d;
    if (!sent) { __atomic_fetch_add(&d->dropped, 1, __ATOMIC_RELAXED); return; }
    __atomic_fetch_add(&d->packets, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&d->payload_bytes, payload, __ATOMIC_RELAXED);
    f->sent++;
    if (idr) sfb_direct_keyframe_sent(d);
}

// Sends what is queued: one sendmmsg for up to SFB_FRAME_BATCH packets (called with the lock held).
static void flush(Frame *f) {
    if (f->queued == 0) return;
    guint8 *packets[SFB_FRAME_BATCH];
    gboolean went[SFB_FRAME_BATCH];
    for (guint i = 0; i < f->queued; i++) packets[i] = f->t->queue[i];
    sfb_direct_transmit_many_locked(f->t->d, packets, f->lens, f->queued, went);
    for (guint i = 0; i < f->queued; i++) counted(f, went[i], f->payloads[i], f->idr[i]);
    f->queued = 0;
}

// One payload, at packet + 12 already: header, SRTP, send (called with the lock held).
static void send_payload(void *ctx, const guint8 *payload, gsize len, gboolean marker) {
    Frame *f = ctx;
    SfbDirectTrack *t = f->t;
    SfbDirectRTP *d = t->d;
    guint8 *p = f->packet;
    gboolean idr = t->video && sfb_h264_rtp_starts_idr(payload, len);
    guint16 seq = t->seq++;
    p[0] = 0x80;
    p[1] = (guint8)((marker ? 0x80 : 0) | t->pt);
    p[2] = (guint8)(seq >> 8);
    p[3] = (guint8)seq;
    p[4] = (guint8)(f->ts >> 24); p[5] = (guint8)(f->ts >> 16); p[6] = (guint8)(f->ts >> 8); p[7] = (guint8)f->ts;
    p[8] = (guint8)(t->ssrc >> 24); p[9] = (guint8)(t->ssrc >> 16); p[10] = (guint8)(t->ssrc >> 8); p[11] = (guint8)t->ssrc;
    int n = (int)(12 + len);
    // Never sent (nor kept) unprotected: a packet SRTP refused is dropped.
    if (!sfb_direct_protect_locked(d, p, &n)) { __atomic_fetch_add(&d->dropped, 1, __ATOMIC_RELAXED); return; }
    // Kept even if the send fails: a NACK for it may still come.
    if (t->video && (d->history || (d->history = sfb_sent_history_new(SFB_HISTORY_BYTES, SFB_HISTORY_SLOTS))))
        sfb_sent_history_keep(d->history, seq, p, (gsize)n);
    // Audio is one packet a frame: sent at once. A video frame's packets go out together.
    if (!t->video) { counted(f, sfb_direct_transmit_locked(d, p, (gsize)n), len, idr); return; }
    // The track's own queue (13 KiB, video only, made at its first frame; used under the lock).
    if (!t->queue) t->queue = g_malloc(sizeof(QueuedPacket) * SFB_FRAME_BATCH);
    memcpy(t->queue[f->queued], p, (gsize)n);
    f->lens[f->queued] = (gsize)n;
    f->payloads[f->queued] = len;
    f->idr[f->queued] = idr;
    if (++f->queued == SFB_FRAME_BATCH) flush(f);
}

guint sfb_direct_track_send(SfbDirectTrack *t, const guint8 *frame, gsize size, guint64 running_time) {
    // rtpbasepayload's RTP time: the base plus the running time in clock-rate units.
    if (running_time != GST_CLOCK_TIME_NONE) t->last_ts = t->ts_base + (guint32)gst_util_uint64_scale_int(running_time, (gint)t->clock_rate, GST_SECOND);
    guint8 packet[SFB_MAX_RTP + SRTP_MAX_TRAILER_LEN];
    Frame f = { .t = t, .packet = packet, .ts = t->last_ts, .sent = 0, .queued = 0 };
    SfbDirectRTP *d = t->d;
    if (!t->video && (size == 0 || 12 + size > SFB_MAX_RTP)) {
        __atomic_fetch_add(&d->dropped, 1, __ATOMIC_RELAXED);
        return 0;
    }
    pthread_mutex_lock(&d->lock);
    if (t->video) {
        sfb_h264_packetize(&t->h264, frame, size, packet + 12, send_payload, &f);
        flush(&f);
    }
    else {
        // rtpopuspay: the frame is the payload; its marker went on the first packet, which
        // the gate dropped before this track took over.
        memcpy(packet + 12, frame, size);
        send_payload(&f, packet + 12, size, FALSE);
    }
    pthread_mutex_unlock(&d->lock);
    return f.sent;
}

void sfb_direct_track_free(SfbDirectTrack *t) {
    if (!t) return;
    g_free(t->queue);
    sfb_direct_rtp_unref(t->d);
    g_free(t);
}
