// The `sfbreorder` element (sfb_reorder.h): rtpbin's jitter buffer, without a thread. Its chain
// runs in the thread that received the packet (nicesrc's, with FastPath's ReceiveInline), puts
// packets in order (reorder_ring.c), stamps them from their RTP timestamps, and pushes at once.
// A gap waits for a retransmission (a GstRTPRetransmissionRequest upstream, as rtpjitterbuffer
// sends: rtpsession turns it into a NACK) until a packet arrives more than `latency` after the
// gap was seen; then it is a counted loss (`stats` num-lost, read like rtpjitterbuffer's).
// What rtpbin and webrtcbin set or connect on a jitter buffer is here (gstrtpbin.c create_stream,
// gstwebrtcbin.c on_rtpbin_new_jitterbuffer): `latency` always, `do-lost`, `do-retransmission`,
// `ts-offset`, `stats`, the `request-pt-map` signal, and for lip sync the `sink_rtcp` pad and
// the `handle-sync` signal (reorder_sync.c).
#include "sfb_reorder_element.h"

GST_DEBUG_CATEGORY(sfb_reorder_debug);
G_DEFINE_TYPE(SfbReorder, sfb_reorder, GST_TYPE_ELEMENT)

enum { PROP_0, PROP_LATENCY, PROP_DO_LOST, PROP_DO_RETRANSMISSION, PROP_TS_OFFSET, PROP_STATS };
enum { SIGNAL_REQUEST_PT_MAP, SIGNAL_LAST };
static guint signals[SIGNAL_LAST];

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE("sink", GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS("application/x-rtp"));
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE("src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS("application/x-rtp"));

#define RING_SIZE 512

static void drop_item(gpointer item) { gst_buffer_unref(item); }

static GstStructure *stats(SfbReorder *self) {
    GST_OBJECT_LOCK(self);
    SfbReorderCounts c = sfb_reorder_ring_counts(self->ring);
    GST_OBJECT_UNLOCK(self);
    return gst_structure_new("application/x-rtp-jitterbuffer-stats",
        "num-pushed", G_TYPE_UINT64, c.pushed, "num-lost", G_TYPE_UINT64, c.lost,
        "num-late", G_TYPE_UINT64, c.late, "num-duplicates", G_TYPE_UINT64, c.duplicates,
        "avg-jitter", G_TYPE_UINT64, (guint64)0, "rtx-count", G_TYPE_UINT64, c.requests,
        "rtx-success-count", G_TYPE_UINT64, c.repaired, "rtx-per-packet", G_TYPE_DOUBLE, 0.0,
        "rtx-rtt", G_TYPE_UINT64, (guint64)0, "num-resyncs", G_TYPE_UINT64, c.resyncs, NULL);
}

static void set_property(GObject *o, guint id, const GValue *v, GParamSpec *spec) {
    SfbReorder *self = SFB_REORDER(o);
    GST_OBJECT_LOCK(self);
    switch (id) {
    case PROP_LATENCY: self->settings.latency_ms = g_value_get_uint(v); break;
    case PROP_DO_LOST: self->settings.do_lost = g_value_get_boolean(v); break;
    case PROP_DO_RETRANSMISSION: self->settings.do_retransmission = g_value_get_boolean(v); break;
    case PROP_TS_OFFSET:
        self->settings.ts_offset = g_value_get_int64(v);
        self->settings.offset_set = TRUE;
        GST_INFO_OBJECT(self, "ts-offset %" G_GINT64_FORMAT " ns", self->settings.ts_offset);
        break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(o, id, spec); break;
    }
    GST_OBJECT_UNLOCK(self);
}

static void get_property(GObject *o, guint id, GValue *v, GParamSpec *spec) {
    SfbReorder *self = SFB_REORDER(o);
    if (id == PROP_STATS) { g_value_take_boxed(v, stats(self)); return; }
    GST_OBJECT_LOCK(self);
    switch (id) {
    case PROP_LATENCY: g_value_set_uint(v, self->settings.latency_ms); break;
    case PROP_DO_LOST: g_value_set_boolean(v, self->settings.do_lost); break;
    case PROP_DO_RETRANSMISSION: g_value_set_boolean(v, self->settings.do_retransmission); break;
    case PROP_TS_OFFSET: g_value_set_int64(v, self->settings.ts_offset); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(o, id, spec); break;
    }
    GST_OBJECT_UNLOCK(self);
}

// Forgets the stream: held packets dropped, timestamps start again from the next packet.
static void reset(SfbReorder *self) {
    GST_OBJECT_LOCK(self);
    sfb_reorder_ring_reset(self->ring, drop_item);
    self->have_base = FALSE;
    self->settings.offset_set = FALSE;
    self->last_pts = GST_CLOCK_TIME_NONE;
    self->off_since = GST_CLOCK_TIME_NONE;
    self->discont = TRUE;
    GST_OBJECT_UNLOCK(self);
    sfb_reorder_cancel_release(self);
    sfb_reorder_drop_held(self);
}

static gboolean sink_event(GstPad *pad, GstObject *parent, GstEvent *event) {
    SfbReorder *self = SFB_REORDER(parent);
    if (GST_EVENT_TYPE(event) == GST_EVENT_CUSTOM_DOWNSTREAM && gst_event_has_name(event, SFB_REORDER_RELEASE_EVENT)) {
        sfb_reorder_release_held(self);  // ours: not passed on
        gst_event_unref(event);
        return TRUE;
    }
    switch (GST_EVENT_TYPE(event)) {
    case GST_EVENT_CAPS: {
        GstCaps *caps;
        gst_event_parse_caps(event, &caps);
        const GstStructure *s = gst_caps_get_structure(caps, 0);
        gint rate = 0;
        if (s && gst_structure_get_int(s, "clock-rate", &rate) && rate > 0) self->clock_rate = rate;
        break;
    }
    case GST_EVENT_SEGMENT: {
        const GstSegment *segment;
        gst_event_parse_segment(event, &segment);
        if (segment->format == GST_FORMAT_TIME) gst_segment_copy_into(segment, &self->segment);
        break;
    }
    case GST_EVENT_FLUSH_STOP:
        reset(self);
        gst_segment_init(&self->segment, GST_FORMAT_TIME);
        break;
    case GST_EVENT_EOS:
        // What waits behind a gap goes out before the end (the gap is a loss).
        sfb_reorder_flush(self);
        break;
    default: break;
    }
    return gst_pad_event_default(pad, parent, event);
}

static gboolean src_query(GstPad *pad, GstObject *parent, GstQuery *query) {
    SfbReorder *self = SFB_REORDER(parent);
    if (GST_QUERY_TYPE(query) != GST_QUERY_LATENCY) return gst_pad_query_default(pad, parent, query);
    // As rtpjitterbuffer answers: upstream's, plus the time a packet may wait behind a gap, plus
    // the first packets' wait for lip sync.
    if (!gst_pad_peer_query(self->sinkpad, query)) return FALSE;
    gboolean live;
    GstClockTime min, max;
    gst_query_parse_latency(query, &live, &min, &max);
    GST_OBJECT_LOCK(self);
    GstClockTime ours = (GstClockTime)self->settings.latency_ms * GST_MSECOND + SFB_REORDER_SYNC_HOLD;
    GST_OBJECT_UNLOCK(self);
    gst_query_set_latency(query, live, min + ours, GST_CLOCK_TIME_NONE);
    return TRUE;
}

static GstStateChangeReturn change_state(GstElement *element, GstStateChange transition) {
    SfbReorder *self = SFB_REORDER(element);
    if (transition == GST_STATE_CHANGE_READY_TO_PAUSED) {
        reset(self);
        gst_segment_init(&self->segment, GST_FORMAT_TIME);
    }
    GstStateChangeReturn ret = GST_ELEMENT_CLASS(sfb_reorder_parent_class)->change_state(element, transition);
    if (transition == GST_STATE_CHANGE_PAUSED_TO_READY) reset(self);
    return ret;
}

static void finalize(GObject *o) {
    SfbReorder *self = SFB_REORDER(o);
    sfb_reorder_ring_free(self->ring, drop_item);
    g_queue_clear_full(&self->held, (GDestroyNotify)gst_mini_object_unref);
    g_free(self->out);
    G_OBJECT_CLASS(sfb_reorder_parent_class)->finalize(o);
}

static void sfb_reorder_class_init(SfbReorderClass *klass) {
    GObjectClass *o = G_OBJECT_CLASS(klass);
    GstElementClass *e = GST_ELEMENT_CLASS(klass);
    o->set_property = set_property;
    o->get_property = get_property;
    o->finalize = finalize;
    e->change_state = change_state;
    GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS;
    g_object_class_install_property(o, PROP_LATENCY, g_param_spec_uint("latency", "Latency",
        "How long a gap waits for a retransmission (ms)", 0, G_MAXUINT, 200, rw));
    g_object_class_install_property(o, PROP_DO_LOST, g_param_spec_boolean("do-lost", "Do lost",
        "Send GstRTPPacketLost events downstream for gaps given up", FALSE, rw));
    g_object_class_install_property(o, PROP_DO_RETRANSMISSION, g_param_spec_boolean("do-retransmission", "Do retransmission",
        "Ask upstream for missing packets (GstRTPRetransmissionRequest)", FALSE, rw));
    g_object_class_install_property(o, PROP_TS_OFFSET, g_param_spec_int64("ts-offset", "Timestamp offset",
        "Added to output timestamps (ns)", G_MININT64, G_MAXINT64, 0, rw));
    g_object_class_install_property(o, PROP_STATS, g_param_spec_boxed("stats", "Statistics",
        "As rtpjitterbuffer's: num-pushed, num-lost, num-late, num-duplicates, rtx-count, rtx-success-count",
        GST_TYPE_STRUCTURE, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));
    // rtpbin connects to it to give the clock rate when the caps lack it (as for rtpjitterbuffer).
    signals[SIGNAL_REQUEST_PT_MAP] = g_signal_new("request-pt-map", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST,
        0, NULL, NULL, NULL, GST_TYPE_CAPS, 1, G_TYPE_UINT);
    sfb_reorder_sync_class_init(e);
    gst_element_class_add_static_pad_template(e, &sink_template);
    gst_element_class_add_static_pad_template(e, &src_template);
    gst_element_class_set_static_metadata(e, "sfubot reorder buffer", "Filter/Network/RTP",
        "Reorders RTP packets by sequence number in the receiving thread (a jitter buffer without a thread)", "sfubot");
}

static void sfb_reorder_init(SfbReorder *self) {
    self->sinkpad = gst_pad_new_from_static_template(&sink_template, "sink");
    gst_pad_set_chain_function(self->sinkpad, sfb_reorder_chain);
    gst_pad_set_event_function(self->sinkpad, sink_event);
    GST_PAD_SET_PROXY_CAPS(self->sinkpad);
    GST_PAD_SET_PROXY_ALLOCATION(self->sinkpad);
    gst_element_add_pad(GST_ELEMENT(self), self->sinkpad);
    self->srcpad = gst_pad_new_from_static_template(&src_template, "src");
    gst_pad_set_query_function(self->srcpad, src_query);
    GST_PAD_SET_PROXY_CAPS(self->srcpad);
    GST_PAD_SET_PROXY_ALLOCATION(self->srcpad);
    gst_element_add_pad(GST_ELEMENT(self), self->srcpad);
    self->ring = sfb_reorder_ring_new(RING_SIZE);
    self->out = g_new0(SfbReorderOut, sfb_reorder_ring_out_capacity(self->ring));
    self->settings.latency_ms = 200;
    self->asked_pt = -1;
    g_queue_init(&self->held);
    self->holding = TRUE;
    self->synced_at = GST_CLOCK_TIME_NONE;
    gst_segment_init(&self->segment, GST_FORMAT_TIME);
}

static gboolean plugin_init(GstPlugin *plugin) {
    GST_DEBUG_CATEGORY_INIT(sfb_reorder_debug, "sfbreorder", 0, "sfubot's jitter buffer without a thread");
    return gst_element_register(plugin, "sfbreorder", GST_RANK_NONE, SFB_TYPE_REORDER);
}

gboolean sfb_reorder_register(void) {
    static gsize done = 0;
    if (g_once_init_enter(&done)) {
        gboolean ok = gst_plugin_register_static(GST_VERSION_MAJOR, GST_VERSION_MINOR, "sfbreorder",
            "sfubot's jitter buffer without a thread", plugin_init, "1.0", "Proprietary", "sfubot", "sfubot", "sfubot: Sources/CGStreamerShims");
        g_once_init_leave(&done, ok ? 1 : 2);
    }
    return done == 1;
}

static GstElement *make_reorder(GstElement *rtpbin, guint session, gpointer data) {
    (void)rtpbin; (void)session; (void)data;
    return gst_element_factory_make("sfbreorder", NULL);  // NULL: rtpbin falls back to rtpjitterbuffer
}

// webrtcbin answers with NACK (and RTX, when offered) only for transceivers with do-nack, which
// no one sets on a recorder's: without it a lost packet is never asked for, whatever the jitter
// buffer (gstwebrtcbin.c: the answer drops rtcp-fb-nack; the jitter buffer gets do-retransmission
// from it in on_rtpbin_new_jitterbuffer).
static void ask_for_retransmissions(GstElement *webrtc, GObject *transceiver, gpointer data) {
    (void)webrtc; (void)data;
    if (g_object_class_find_property(G_OBJECT_GET_CLASS(transceiver), "do-nack")) g_object_set(transceiver, "do-nack", TRUE, NULL);
}

// webrtcbin keeps every received packet for 250 ms in rtpbin's rtpstorage (its `new-storage`
// handler sets size-time), only for the ULPFEC decoder after each stream's demuxer; Janus never
// sends ULPFEC (sdp.c strips red and ulpfec from what it negotiates). The stored reference made
// every packet shared, so that decoder, which renumbers each packet, copied it. Connected after
// webrtcbin's: size-time 0 disables the storage. (Blocking webrtcbin's FEC decoder handler as
// well made webrtcbin warn "jitter_buffer_set_retransmission: code should not be reached".)
static void no_storage(GstElement *rtpbin, GstElement *storage, guint session, gpointer data) {
    (void)rtpbin; (void)session; (void)data;
    g_object_set(storage, "size-time", (guint64)0, NULL);
}

int sfb_webrtc_reorder_jitterbuffers(GstElement *webrtc) {
    if (!sfb_reorder_register()) return 3;
    GstElement *rtpbin = gst_bin_get_by_name(GST_BIN(webrtc), "rtpbin");
    if (rtpbin == NULL) return 1;
    if (g_signal_lookup("request-jitterbuffer", G_OBJECT_TYPE(rtpbin)) == 0) {
        gst_object_unref(rtpbin);
        return 2;
    }
    g_signal_connect(rtpbin, "request-jitterbuffer", G_CALLBACK(make_reorder), NULL);
    g_signal_connect(rtpbin, "new-storage", G_CALLBACK(no_storage), NULL);
    sfb_rtcp_split_watch(rtpbin);
    gst_object_unref(rtpbin);
    g_signal_connect(webrtc, "on-new-transceiver", G_CALLBACK(ask_for_retransmissions), NULL);
    return 0;
}
