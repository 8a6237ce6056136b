// sfbreorder's part in rtpbin's lip sync (gstrtpbin.c gst_rtp_bin_handle_sync): rtpbin links
// rtpssrcdemux's RTCP for the stream to a `sink_rtcp` pad it requests, and connects to
// `handle-sync`. Each sender report about the stream is passed on in that signal, with the
// mapping this element stamps packets by (its first packet's extended RTP time and arrival);
// rtpbin pairs the streams of one CNAME and sets `ts-offset` on the earlier ones, as it does
// for rtpjitterbuffer (gstrtpjitterbuffer.c do_handle_sync: the same fields).
#include "sfb_reorder_element.h"

static GstStaticPadTemplate rtcp_template = GST_STATIC_PAD_TEMPLATE("sink_rtcp", GST_PAD_SINK, GST_PAD_REQUEST, GST_STATIC_CAPS("application/x-rtcp"));
static guint handle_sync_signal;

static guint32 be32(const guint8 *p) { return (guint32)p[0] << 24 | (guint32)p[1] << 16 | (guint32)p[2] << 8 | p[3]; }

// The first sender report (RFC 3550 §6.4.1) about `ssrc` in a compound RTCP packet.
static gboolean find_report(const guint8 *p, gsize size, guint32 ssrc, guint64 *ntp, guint32 *rtp) {
    for (gsize at = 0; at + 4 <= size;) {
        gsize length = ((gsize)(p[at + 2] << 8 | p[at + 3]) + 1) * 4;
        if ((p[at] >> 6) != 2 || at + length > size) return FALSE;
        if (p[at + 1] == 200 && length >= 28 && be32(p + at + 4) == ssrc) {
            *ntp = (guint64)be32(p + at + 8) << 32 | be32(p + at + 12);
            *rtp = be32(p + at + 16);
            return TRUE;
        }
        at += length;
    }
    return FALSE;
}

static GstFlowReturn rtcp_chain(GstPad *pad, GstObject *parent, GstBuffer *buffer) {
    (void)pad;
    SfbReorder *self = SFB_REORDER(parent);
    GstMapInfo map;
    guint64 ntp = 0;
    guint32 rtp = 0;
    gboolean found = FALSE;
    GstStructure *s = NULL;
    // The stamping state is the RTP side's (its stream lock): both come from the same thread
    // (webrtcbin's receive side), the lock makes sure.
    GST_PAD_STREAM_LOCK(self->sinkpad);
    if (gst_buffer_map(buffer, &map, GST_MAP_READ)) {
        found = find_report(map.data, map.size, self->ssrc, &ntp, &rtp);
        gst_buffer_unmap(buffer, &map);
    }
    if (found && self->have_base && self->clock_rate > 0) {
        guint64 sr_ext = self->last_rtp + (gint32)(rtp - (guint32)self->last_rtp);
        // As rtpjitterbuffer (max-rtcp-rtp-time-diff, 1 s): a report far ahead of the packets
        // seen so far does not describe them.
        if (sr_ext >= self->base_rtp && sr_ext <= self->last_rtp + (guint64)self->clock_rate) {
            s = gst_structure_new("application/x-rtp-sync",
                "base-rtptime", G_TYPE_UINT64, self->base_rtp, "base-time", G_TYPE_UINT64, (guint64)self->base_time,
                "clock-rate", G_TYPE_UINT, (guint)self->clock_rate, "clock-base", G_TYPE_UINT64, self->base_rtp,
                "ssrc", G_TYPE_UINT, self->ssrc, "sr-ext-rtptime", G_TYPE_UINT64, sr_ext,
                "sr-ntpnstime", G_TYPE_UINT64, gst_util_uint64_scale(ntp, GST_SECOND, G_GUINT64_CONSTANT(1) << 32),
                "sr-buffer", GST_TYPE_BUFFER, buffer, NULL);
        }
    }
    GST_PAD_STREAM_UNLOCK(self->sinkpad);
    if (s) {
        GST_DEBUG_OBJECT(self, "sender report: %" GST_PTR_FORMAT, s);
        g_signal_emit(self, handle_sync_signal, 0, s);
        gst_structure_free(s);
        // rtpbin has this stream's report: what waits for lip sync goes out once its offset is
        // set, or a moment later (reorder_chain.c).
        GST_PAD_STREAM_LOCK(self->sinkpad);
        if (!GST_CLOCK_TIME_IS_VALID(self->synced_at)) {
            GstClockTime now = gst_element_get_current_running_time(GST_ELEMENT(self));
            self->synced_at = GST_CLOCK_TIME_IS_VALID(now) ? now : (GstClockTime)g_get_monotonic_time() * GST_USECOND;
        }
        GST_PAD_STREAM_UNLOCK(self->sinkpad);
    }
    gst_buffer_unref(buffer);
    return GST_FLOW_OK;
}

static gboolean rtcp_event(GstPad *pad, GstObject *parent, GstEvent *event) {
    (void)pad; (void)parent;
    gst_event_unref(event);  // caps, segments, EOS of the RTCP side: nothing goes on from here
    return TRUE;
}

static GstPad *request_new_pad(GstElement *element, GstPadTemplate *templ, const gchar *name, const GstCaps *caps) {
    (void)name; (void)caps;
    SfbReorder *self = SFB_REORDER(element);
    if (self->rtcppad) return NULL;
    GstPad *pad = gst_pad_new_from_template(templ, "sink_rtcp");
    gst_pad_set_chain_function(pad, rtcp_chain);
    gst_pad_set_event_function(pad, rtcp_event);
    self->rtcppad = pad;
    gst_element_add_pad(element, pad);  // activated here if the element is already running
    return pad;
}

static void release_pad(GstElement *element, GstPad *pad) {
    SfbReorder *self = SFB_REORDER(element);
    if (pad != self->rtcppad) return;
    self->rtcppad = NULL;
    gst_pad_set_active(pad, FALSE);
    gst_element_remove_pad(element, pad);
}

void sfb_reorder_sync_class_init(GstElementClass *e) {
    e->request_new_pad = request_new_pad;
    e->release_pad = release_pad;
    gst_element_class_add_static_pad_template(e, &rtcp_template);
    handle_sync_signal = g_signal_new("handle-sync", G_TYPE_FROM_CLASS(e), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
                                      G_TYPE_NONE, 1, GST_TYPE_STRUCTURE | G_SIGNAL_TYPE_STATIC_SCOPE);
}
