// See CDirectRTP.h: the peer's receiver reports and keyframe requests about what the direct
// sender sends, and the sender's own counters.
#include "direct_rtp.h"
#include "elements.h"

static void read_buffer(SfbDirectRTP *d, GstBuffer *buffer) {
    gint n = __atomic_load_n(&d->n_ssrcs, __ATOMIC_ACQUIRE);
    if (n == 0) return;
    GstMapInfo map;
    if (!gst_buffer_map(buffer, &map, GST_MAP_READ)) return;
    // RTCP packet types 200–206; RTP never uses them as M|PT (RFC 5761 §4).
    gboolean rtcp = map.size >= 8 && map.data[1] >= 200 && map.data[1] <= 206;
    guint found = 0, requests = 0;
    for (gint i = 0; rtcp && i < n; i++) {
        guint32 ssrc = d->ssrcs[i];
        gint64 lost = 0;
        guint32 jitter = 0;
        guint f = sfb_rtcp_report_blocks(map.data, map.size, ssrc, &lost, &jitter);
        if (f > 0) {
            __atomic_store_n(&d->cumulative_lost[i], lost, __ATOMIC_RELAXED);
            // The first SSRC's (the one that started first; audio for a load publisher).
            if (i == 0) __atomic_store_n(&d->jitter, jitter, __ATOMIC_RELAXED);
        }
        found += f;
        requests += sfb_rtcp_keyframe_requests(map.data, map.size, ssrc);
    }
    if (rtcp) sfb_direct_answer_nacks(d, map.data, map.size);
    gst_buffer_unmap(buffer, &map);
    if (found) __atomic_fetch_add(&d->reports, found, __ATOMIC_RELAXED);
    if (requests) {
        __atomic_fetch_add(&d->keyframe_requests, requests, __ATOMIC_RELAXED);
        // The oldest unanswered request is what the next keyframe answers.
        gint64 none = 0;
        __atomic_compare_exchange_n(&d->pending_since, &none, g_get_monotonic_time(), FALSE, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    }
}

static GstPadProbeReturn on_rtcp(GstPad *pad, GstPadProbeInfo *info, gpointer data) {
    (void)pad;
    sfb_direct_for_each_buffer(info, data, read_buffer);
    return GST_PAD_PROBE_OK;
}

gulong sfb_direct_rtp_watch_reports(SfbDirectRTP *d, GstElement *webrtcbin, GstPad **pad) {
    *pad = NULL;
    int n = 0;
    GstElement *dec = sfb_only_element(webrtcbin, "srtpdec", &n);
    if (!dec) return 0;
    *pad = gst_element_get_static_pad(dec, "rtcp_src");
    gst_object_unref(dec);
    if (!*pad) return 0;
    g_atomic_int_inc(&d->refs);
    return gst_pad_add_probe(*pad, GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_BUFFER_LIST, on_rtcp, d, sfb_direct_release);
}

void sfb_direct_rtp_reports(SfbDirectRTP *d, guint64 *reports, gint64 *cumulativeLost, guint32 *jitter) {
    *reports = __atomic_load_n(&d->reports, __ATOMIC_RELAXED);
    gint64 lost = 0;
    for (gint i = 0; i < SFB_DIRECT_SSRCS; i++) lost += __atomic_load_n(&d->cumulative_lost[i], __ATOMIC_RELAXED);
    *cumulativeLost = lost;
    *jitter = __atomic_load_n(&d->jitter, __ATOMIC_RELAXED);
}

// The counters read outside the send path (kept here: direct_rtp.c holds the send path).
void sfb_direct_rtp_counts(SfbDirectRTP *d, guint64 *packets, guint64 *payloadBytes, guint64 *dropped) {
    *packets = __atomic_load_n(&d->packets, __ATOMIC_RELAXED);
    *payloadBytes = __atomic_load_n(&d->payload_bytes, __ATOMIC_RELAXED);
    *dropped = __atomic_load_n(&d->dropped, __ATOMIC_RELAXED);
}

guint64 sfb_direct_rtp_refused(SfbDirectRTP *d) { return __atomic_load_n(&d->refused, __ATOMIC_RELAXED); }

guint64 sfb_direct_rtp_through_agent(SfbDirectRTP *d) { return __atomic_load_n(&d->through_agent, __ATOMIC_RELAXED); }
