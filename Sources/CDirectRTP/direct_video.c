// See CDirectRTP.h: video through the direct sender. Packets are protected and sent as audio's
// are; an IDR leaving answers the keyframe requests (PLI, FIR) read since the last one. The
// load publishers' video is one shared encoder's, which cannot make a keyframe for one peer:
// its next IDR is the answer, at most one keyframe interval later.
#include "direct_rtp.h"

static void send_video(SfbDirectRTP *d, GstBuffer *buffer) {
    guint8 head[12 + 60 + 4];   // the header (CSRCs, no extension in practice) and the payload's start
    gsize n = gst_buffer_extract(buffer, 0, head, sizeof head);
    gboolean idr = FALSE;
    if (n >= 12) {
        gsize h = 12 + 4 * (head[0] & 0x0f);
        if (head[0] & 0x10 && n >= h + 4) h += 4 + 4 * (((gsize)head[h + 2] << 8) | head[h + 3]);
        idr = h < n && sfb_h264_rtp_starts_idr(head + h, n - h);
    }
    if (sfb_direct_send_one(d, buffer, TRUE) && idr) sfb_direct_keyframe_sent(d);
}

void sfb_direct_keyframe_sent(SfbDirectRTP *d) {
    __atomic_fetch_add(&d->keyframes_sent, 1, __ATOMIC_RELAXED);
    gint64 since = __atomic_exchange_n(&d->pending_since, 0, __ATOMIC_RELAXED);
    if (since == 0) return;
    __atomic_fetch_add(&d->keyframe_answers, 1, __ATOMIC_RELAXED);
    guint64 took = (guint64)(g_get_monotonic_time() - since);
    guint64 max = __atomic_load_n(&d->answer_us_max, __ATOMIC_RELAXED);
    while (took > max && !__atomic_compare_exchange_n(&d->answer_us_max, &max, took, TRUE, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
}

static GstPadProbeReturn on_video(GstPad *pad, GstPadProbeInfo *info, gpointer data) {
    (void)pad;
    sfb_direct_for_each_buffer(info, data, send_video);
    return GST_PAD_PROBE_DROP;
}

gulong sfb_direct_rtp_attach_video(SfbDirectRTP *d, GstPad *pad) {
    g_atomic_int_inc(&d->refs);
    return gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_BUFFER_LIST, on_video, d, sfb_direct_release);
}

void sfb_direct_rtp_keyframes(SfbDirectRTP *d, guint64 *requests, guint64 *answered, guint64 *sent, guint64 *slowestAnswerMicroseconds) {
    *requests = __atomic_load_n(&d->keyframe_requests, __ATOMIC_RELAXED);
    *answered = __atomic_load_n(&d->keyframe_answers, __ATOMIC_RELAXED);
    *sent = __atomic_load_n(&d->keyframes_sent, __ATOMIC_RELAXED);
    *slowestAnswerMicroseconds = __atomic_load_n(&d->answer_us_max, __ATOMIC_RELAXED);
}
