// See CDirectRTP.h: the peer's receiver reports about what the direct sender sends.
#include "direct_rtp.h"
#include "elements.h"

static void read_buffer(SfbDirectRTP *d, GstBuffer *buffer) {
    if (!__atomic_load_n(&d->ssrc_known, __ATOMIC_ACQUIRE)) return;
    guint32 ours = __atomic_load_n(&d->ssrc, __ATOMIC_RELAXED);
    GstMapInfo map;
    if (!gst_buffer_map(buffer, &map, GST_MAP_READ)) return;
    gint64 lost = 0;
    guint32 jitter = 0;
    // RTCP packet types 200–204; RTP never uses them as M|PT (RFC 5761 §4).
    guint found = map.size >= 8 && map.data[1] >= 200 && map.data[1] <= 204
        ? sfb_rtcp_report_blocks(map.data, map.size, ours, &lost, &jitter) : 0;
    gst_buffer_unmap(buffer, &map);
    if (found == 0) return;
    __atomic_store_n(&d->cumulative_lost, lost, __ATOMIC_RELAXED);
    __atomic_store_n(&d->jitter, jitter, __ATOMIC_RELAXED);
    __atomic_fetch_add(&d->reports, found, __ATOMIC_RELAXED);
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
    *cumulativeLost = __atomic_load_n(&d->cumulative_lost, __ATOMIC_RELAXED);
    *jitter = __atomic_load_n(&d->jitter, __ATOMIC_RELAXED);
}
