// sfbreorder's packets (see reorder_element.c): in the thread that pushed them, under the sink
// pad's stream lock; the ring under the object lock, only while it is consulted.
#include "sfb_reorder_element.h"

// A missing packet is asked for again after this share of the latency, at most this many times.
#define RETRY_PARTS 5
#define MAX_TRIES 4

static GstClockTime now_running(SfbReorder *self) {
    GstClockTime t = gst_element_get_current_running_time(GST_ELEMENT(self));
    return GST_CLOCK_TIME_IS_VALID(t) ? t : (GstClockTime)g_get_monotonic_time() * GST_USECOND;
}

// rtpbin answers with the payload's caps (from webrtcbin's SDP) when the caps event had no rate.
static void learn_clock_rate(SfbReorder *self, guint8 pt) {
    self->asked_pt = pt;
    GstCaps *caps = NULL;
    g_signal_emit_by_name(self, "request-pt-map", (guint)pt, &caps);
    const GstStructure *s = caps && !gst_caps_is_empty(caps) ? gst_caps_get_structure(caps, 0) : NULL;
    gint rate = 0;
    if (s && gst_structure_get_int(s, "clock-rate", &rate) && rate > 0) self->clock_rate = rate;
    if (caps) gst_caps_unref(caps);
}

// A packet's RTP time, extended across wraps; the first packet's arrival and RTP time are the
// stream's base (and start the wait for lip sync).
static guint64 advance(SfbReorder *self, guint32 rtp, GstClockTime now) {
    if (!self->have_base) {
        self->have_base = TRUE;
        self->base_time = now;
        self->base_rtp = self->last_rtp = ((guint64)1 << 32) | rtp;
        self->hold_until = now + SFB_REORDER_SYNC_HOLD;
        if (self->holding) sfb_reorder_schedule_release(self, self->hold_until);
        // Video: a keyframe asked for now, not when the held packets go out and the branch
        // appears (up to 2 s later): a file starts at a keyframe, and what comes before the
        // first one is not written. As a depayloader asks (rtpssrcdemux adds the SSRC,
        // rtpsession sends a PLI), and on the bus: through Janus a recvonly peer's PLI does
        // not reliably reach the publisher, and the recorder asks Janus by signalling.
        if (self->clock_rate == 90000) {
            gst_pad_push_event(self->sinkpad, gst_event_new_custom(GST_EVENT_CUSTOM_UPSTREAM,
                gst_structure_new("GstForceKeyUnit", "all-headers", G_TYPE_BOOLEAN, TRUE, NULL)));
            gst_element_post_message(GST_ELEMENT(self), gst_message_new_element(GST_OBJECT(self),
                gst_structure_new_empty(SFB_REORDER_FIRST_VIDEO_PACKET)));
        }
    }
    self->last_rtp += (gint32)(rtp - (guint32)self->last_rtp);
    return self->last_rtp;
}

// How far `now` is past the arrival the stream's base and RTP time give packet `ext`.
static gint64 off_by(SfbReorder *self, guint64 ext, GstClockTime now) {
    gint64 ticks = (gint64)(ext - self->base_rtp);
    gint64 ns = (gint64)gst_util_uint64_scale_int((guint64)ABS(ticks), GST_SECOND, self->clock_rate);
    return (gint64)now - ((gint64)self->base_time + (ticks < 0 ? -ns : ns));
}

// The output timestamp: the first packet's arrival plus the RTP time since it, plus ts-offset;
// the arrival itself when the clock rate is unknown.
static GstClockTime stamp(SfbReorder *self, guint64 ext, GstClockTime now, gint64 ts_offset) {
    gint64 t = (gint64)now;
    if (self->clock_rate > 0) {
        gint64 ticks = (gint64)(ext - self->base_rtp);
        gint64 ns = (gint64)gst_util_uint64_scale_int((guint64)ABS(ticks), GST_SECOND, self->clock_rate);
        t = (gint64)self->base_time + (ticks < 0 ? -ns : ns);
    }
    t += ts_offset;
    GstClockTime pts = gst_segment_position_from_running_time(&self->segment, GST_FORMAT_TIME, t > 0 ? (GstClockTime)t : 0);
    return GST_CLOCK_TIME_IS_VALID(pts) ? pts : self->segment.start;
}

static GstFlowReturn push(SfbReorder *self, GstBuffer *buffer, GstClockTime now, gint64 ts_offset) {
    guint64 ext = GST_BUFFER_OFFSET(buffer);
    GST_BUFFER_OFFSET(buffer) = GST_BUFFER_OFFSET_NONE;
    GST_BUFFER_PTS(buffer) = self->last_pts = stamp(self, ext, now, ts_offset);
    GST_BUFFER_DTS(buffer) = GST_CLOCK_TIME_NONE;
    GST_LOG_OBJECT(self, "rtp %" G_GUINT64_FORMAT " → %" GST_TIME_FORMAT, ext, GST_TIME_ARGS(GST_BUFFER_PTS(buffer)));
    return gst_pad_push(self->srcpad, buffer);
}

static GstFlowReturn release(SfbReorder *self, GstClockTime now);

static GstFlowReturn emit(SfbReorder *self, GstBuffer *buffer, GstClockTime now, const SfbReorderSettings *settings) {
    guint8 h[8] = { 0 };
    gst_buffer_extract(buffer, 0, h, 8);
    guint32 rtp = (guint32)h[4] << 24 | (guint32)h[5] << 16 | (guint32)h[6] << 8 | h[7];
    buffer = gst_buffer_make_writable(buffer);
    guint64 ext = advance(self, rtp, now);
    gint64 off = self->clock_rate > 0 ? off_by(self, ext, now) : 0;
    if (ABS(off) <= (gint64)SFB_REORDER_REBASE) {
        self->off_since = GST_CLOCK_TIME_NONE;
    } else if (!GST_CLOCK_TIME_IS_VALID(self->off_since)) {
        self->off_since = now;
    } else if (now >= self->off_since + SFB_REORDER_REBASE_AFTER) {
        // What waits for lip sync is stamped on the old base first.
        if (self->holding) release(self, now);
        GST_DEBUG_OBJECT(self, "packets %" G_GINT64_FORMAT " ms off their RTP time since %" GST_TIME_FORMAT ": stamping from here",
                         off / (gint64)GST_MSECOND, GST_TIME_ARGS(self->off_since));
        self->base_time = (GstClockTime)((gint64)self->base_time + off);
        self->off_since = GST_CLOCK_TIME_NONE;
    }
    GST_BUFFER_OFFSET(buffer) = ext;
    if (self->discont) {
        GST_BUFFER_FLAG_SET(buffer, GST_BUFFER_FLAG_DISCONT);
        self->discont = FALSE;
    }
    if (self->holding) {
        g_queue_push_tail(&self->held, buffer);
        return GST_FLOW_OK;
    }
    return push(self, buffer, now, settings->ts_offset);
}

// What waited for lip sync goes out, stamped with the offset rtpbin has set by now (none if the
// report never came), in the order it arrived in.
static GstFlowReturn release(SfbReorder *self, GstClockTime now) {
    GST_OBJECT_LOCK(self);
    gint64 ts_offset = self->settings.ts_offset;
    GST_OBJECT_UNLOCK(self);
    GST_DEBUG_OBJECT(self, "%u held for lip sync go out with ts-offset %" G_GINT64_FORMAT " ns (sender report %s)",
                     g_queue_get_length(&self->held), ts_offset, GST_CLOCK_TIME_IS_VALID(self->synced_at) ? "in" : "not in");
    self->holding = FALSE;
    GstFlowReturn ret = GST_FLOW_OK;
    GstMiniObject *o;
    while ((o = g_queue_pop_head(&self->held)) != NULL) {
        if (GST_IS_BUFFER(o)) {
            GstFlowReturn r = push(self, GST_BUFFER_CAST(o), now, ts_offset);
            if (ret == GST_FLOW_OK) ret = r;
        } else {
            gst_pad_push_event(self->srcpad, GST_EVENT_CAST(o));
        }
    }
    return ret;
}

void sfb_reorder_release_held(SfbReorder *self) {
    if (self->holding && self->have_base) release(self, now_running(self));
}

void sfb_reorder_drop_held(SfbReorder *self) {
    g_queue_clear_full(&self->held, (GDestroyNotify)gst_mini_object_unref);
    self->holding = TRUE;
    self->synced_at = GST_CLOCK_TIME_NONE;
}

// As rtpjitterbuffer's (gstrtpjitterbuffer.c, send_rtx_request): rtpssrcdemux adds the SSRC,
// rtpsession schedules the NACK.
static void request(SfbReorder *self, const SfbReorderOut *o, GstClockTime now, const SfbReorderSettings *settings) {
    guint retry_ms = MAX(settings->latency_ms / RETRY_PARTS, 1);
    GstEvent *event = gst_event_new_custom(GST_EVENT_CUSTOM_UPSTREAM,
        gst_structure_new("GstRTPRetransmissionRequest",
            "seqnum", G_TYPE_UINT, (guint)(o->seq & 0xffff), "running-time", G_TYPE_UINT64, (guint64)now,
            "delay", G_TYPE_UINT, o->count * retry_ms, "retry", G_TYPE_UINT, o->count,
            "frequency", G_TYPE_UINT, retry_ms, "period", G_TYPE_UINT, settings->latency_ms,
            "deadline", G_TYPE_UINT, settings->latency_ms, "packet-spacing", G_TYPE_UINT64, (guint64)0, NULL));
    GST_DEBUG_OBJECT(self, "asking for #%u (try %u)", (guint)(o->seq & 0xffff), o->count + 1);
    gst_pad_push_event(self->sinkpad, event);
}

static void lost(SfbReorder *self, const SfbReorderOut *o, const SfbReorderSettings *settings) {
    GST_DEBUG_OBJECT(self, "gave up #%u and %u after it", (guint)(o->seq & 0xffff), o->count - 1);
    self->discont = TRUE;
    if (!settings->do_lost) return;
    // Depayloaders drop what they had of the frame and may ask for a keyframe (rtph264depay).
    GstEvent *event = gst_event_new_custom(GST_EVENT_CUSTOM_DOWNSTREAM,
        gst_structure_new("GstRTPPacketLost", "seqnum", G_TYPE_UINT, (guint)(o->seq & 0xffff),
            "timestamp", G_TYPE_UINT64, GST_CLOCK_TIME_IS_VALID(self->last_pts) ? self->last_pts : (guint64)0,
            "duration", G_TYPE_UINT64, (guint64)0, "retry", G_TYPE_UINT, (guint)0, NULL));
    // Behind the packets before it, when they wait for lip sync.
    if (self->holding && self->have_base) g_queue_push_tail(&self->held, event);
    else gst_pad_push_event(self->srcpad, event);
}

// Does what the ring said, in order. Returns the first failure to push (packets after it are
// still pushed: one not-linked stream must not drop the others' order).
static GstFlowReturn deliver(SfbReorder *self, guint n, GstClockTime now, const SfbReorderSettings *settings) {
    GstFlowReturn ret = GST_FLOW_OK;
    for (guint i = 0; i < n; i++) {
        const SfbReorderOut *o = &self->out[i];
        switch (o->kind) {
        case SFB_REORDER_EMIT: {
            GstFlowReturn r = emit(self, o->item, now, settings);
            if (ret == GST_FLOW_OK) ret = r;
            break;
        }
        case SFB_REORDER_LOST: lost(self, o, settings); break;
        case SFB_REORDER_REQUEST: request(self, o, now, settings); break;
        case SFB_REORDER_DROP: gst_buffer_unref(o->item); break;
        }
    }
    return ret;
}

GstFlowReturn sfb_reorder_chain(GstPad *pad, GstObject *parent, GstBuffer *buffer) {
    (void)pad;
    SfbReorder *self = SFB_REORDER(parent);
    guint8 h[12];
    if (gst_buffer_extract(buffer, 0, h, 12) < 12 || (h[0] >> 6) != 2) {
        gst_buffer_unref(buffer);  // not RTP (rtpsession lets none through): nothing to order
        return GST_FLOW_OK;
    }
    guint16 seq = (guint16)(h[2] << 8 | h[3]);
    guint8 pt = h[1] & 0x7f;
    self->ssrc = (guint32)h[8] << 24 | (guint32)h[9] << 16 | (guint32)h[10] << 8 | h[11];
    if (self->clock_rate <= 0 && self->asked_pt != pt) learn_clock_rate(self, pt);
    GstClockTime now = now_running(self);
    GST_OBJECT_LOCK(self);
    SfbReorderSettings settings = self->settings;
    if (!self->have_base)
        GST_INFO_OBJECT(self, "first packet #%u: latency %u ms, do-retransmission %d, do-lost %d", seq, settings.latency_ms,
                        settings.do_retransmission, settings.do_lost);
    guint64 latency = (guint64)settings.latency_ms * GST_MSECOND;
    SfbReorderPolicy policy = { .give_up_after = latency, .retry_after = latency / RETRY_PARTS,
                                .max_tries = MAX_TRIES, .request = settings.do_retransmission };
    guint n = sfb_reorder_ring_push(self->ring, seq, now, buffer, &policy, self->out);
    GST_OBJECT_UNLOCK(self);
    GstFlowReturn ret = deliver(self, n, now, &settings);
    gboolean settled = GST_CLOCK_TIME_IS_VALID(self->synced_at) && now >= self->synced_at + SFB_REORDER_SYNC_SETTLE;
    if (self->holding && self->have_base && (settings.offset_set || settled || now >= self->hold_until)) {
        GstFlowReturn r = release(self, now);
        if (ret == GST_FLOW_OK) ret = r;
    }
    return ret;
}

void sfb_reorder_flush(SfbReorder *self) {
    GST_OBJECT_LOCK(self);
    SfbReorderSettings settings = self->settings;
    guint n = sfb_reorder_ring_flush(self->ring, self->out);
    GST_OBJECT_UNLOCK(self);
    GstClockTime now = now_running(self);
    deliver(self, n, now, &settings);
    if (self->holding) release(self, now);
}
