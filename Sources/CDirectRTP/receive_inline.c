// See CDirectRTP.h. webrtcbin's transport receive bin is nicesrc → capsfilter → queue →
// dtlssrtpdec; the queue is there so that nicesrc's thread, which also answers STUN, never
// waits while webrtcbin holds the receive side (a blocking probe on the queue's src pad until
// ICE is connected, and again whenever ICE is lost). Past that point it only hands every packet
// to a second thread. This probe, on the queue's sink pad, gives the packet to dtlssrtpdec in
// nicesrc's thread instead, unless the hold is on or the queue still holds packets.
#include "CDirectRTP.h"
#include "elements.h"
#include <string.h>

struct SfbReceiveInline {
    gint refs;
    GstPad *queue_sink;  // where the shortcut's probe is
    GstPad *queue_src;   // where webrtcbin's hold (a blocking probe) is put
    GstPad *target;      // dtlssrtpdec's sink pad, the queue's peer
    gulong on_packet_id, on_arrival_id;
    // nicesrc's thread alone (the only one pushing into the queue, under the queue sink pad's
    // stream lock) changes these. Each buffer given to the queue is stamped with `queued`
    // (qdata: its reference count, hence who may write it, stays as it was).
    gint inline_mode;             // __atomic
    gsize queued;                 // stamps given
    gsize arrived;                // __atomic: the newest stamp dtlssrtpdec got through the queue
    guint64 inline_packets, queued_packets;   // __atomic, relaxed
};

static GQuark stamp(void) {
    static gsize quark = 0;
    if (g_once_init_enter(&quark)) g_once_init_leave(&quark, g_quark_from_static_string("sfb-receive-inline-stamp"));
    return (GQuark)quark;
}

static guint64 packets(GstPadProbeInfo *info) {
    return (info->type & GST_PAD_PROBE_TYPE_BUFFER_LIST) ? gst_buffer_list_length(GST_PAD_PROBE_INFO_BUFFER_LIST(info)) : 1;
}

// The probe's buffer, or its list's last one.
static GstBuffer *newest(GstPadProbeInfo *info) {
    if (!(info->type & GST_PAD_PROBE_TYPE_BUFFER_LIST)) return GST_PAD_PROBE_INFO_BUFFER(info);
    GstBufferList *list = GST_PAD_PROBE_INFO_BUFFER_LIST(info);
    guint n = gst_buffer_list_length(list);
    return n ? gst_buffer_list_get(list, n - 1) : NULL;
}

// On the queue's sink pad, in nicesrc's thread. Packets go inline only once everything the
// queue was given has reached dtlssrtpdec (or was dropped by the queue): a packet never passes
// one the queue still holds. Until the queue has delivered once, dtlssrtpdec has not had the
// stream's caps and segment either (the hold drops events; they follow the first buffer the
// queue pushes), so the first packets always take the queue.
static GstPadProbeReturn on_packet(GstPad *pad, GstPadProbeInfo *info, gpointer data) {
    (void)pad;
    SfbReceiveInline *r = data;
    gboolean blocked = gst_pad_is_blocked(r->queue_src);
    gboolean inline_mode = __atomic_load_n(&r->inline_mode, __ATOMIC_RELAXED);
    if (!inline_mode && !blocked && r->queued && __atomic_load_n(&r->arrived, __ATOMIC_ACQUIRE) == r->queued) {
        // The queue is drained: nothing is left in it to be overtaken.
        inline_mode = TRUE;
        __atomic_store_n(&r->inline_mode, 1, __ATOMIC_RELEASE);
    } else if (inline_mode && blocked) {
        // The hold is back: queue again, until the queue has given back all it holds.
        inline_mode = FALSE;
        __atomic_store_n(&r->inline_mode, 0, __ATOMIC_RELEASE);
    }
    GstBuffer *last = inline_mode ? NULL : newest(info);
    if (!inline_mode) {
        if (last) gst_mini_object_set_qdata(GST_MINI_OBJECT_CAST(last), stamp(), GSIZE_TO_POINTER(++r->queued), NULL);
        __atomic_fetch_add(&r->queued_packets, packets(info), __ATOMIC_RELAXED);
        return GST_PAD_PROBE_OK;
    }
    // A hold webrtcbin adds after the check above lets this one packet through, as one the
    // queue had already pushed when the hold came: the order of packets is kept either way.
    __atomic_fetch_add(&r->inline_packets, packets(info), __ATOMIC_RELAXED);
    // The probe owns the data it handles; chaining gives it to dtlssrtpdec. If the queue's
    // thread is still pushing the last packet it held, the sink pad's stream lock puts this
    // one after it.
    GstFlowReturn ret = (info->type & GST_PAD_PROBE_TYPE_BUFFER_LIST)
        ? gst_pad_chain_list(r->target, GST_PAD_PROBE_INFO_BUFFER_LIST(info))
        : gst_pad_chain(r->target, GST_PAD_PROBE_INFO_BUFFER(info));
    GST_PAD_PROBE_INFO_DATA(info) = NULL;
    GST_PAD_PROBE_INFO_FLOW_RETURN(info) = ret;
    return GST_PAD_PROBE_HANDLED;
}

// On dtlssrtpdec's sink pad, under its stream lock: notes the queue's deliveries. Nothing
// comes through the queue while packets go inline, so the stamp (a global lock in GLib) is
// read only while they do not.
static GstPadProbeReturn on_arrival(GstPad *pad, GstPadProbeInfo *info, gpointer data) {
    (void)pad;
    SfbReceiveInline *r = data;
    if (__atomic_load_n(&r->inline_mode, __ATOMIC_ACQUIRE)) return GST_PAD_PROBE_OK;
    GstBuffer *b = newest(info);
    gsize s = b ? GPOINTER_TO_SIZE(gst_mini_object_get_qdata(GST_MINI_OBJECT_CAST(b), stamp())) : 0;
    if (s) __atomic_store_n(&r->arrived, s, __ATOMIC_RELEASE);
    return GST_PAD_PROBE_OK;
}

static void unref(SfbReceiveInline *r);
static void release(gpointer data) { unref(data); }

// The pad `pad` is linked to, if its element is made by `factory` (with a reference).
static GstPad *peer_of(GstPad *pad, const char *factory) {
    GstPad *peer = gst_pad_get_peer(pad);
    if (!peer) return NULL;
    GstElement *e = gst_pad_get_parent_element(peer);
    GstElementFactory *f = e ? gst_element_get_factory(e) : NULL;
    gboolean ok = f && strcmp(gst_plugin_feature_get_name(GST_PLUGIN_FEATURE(f)), factory) == 0;
    if (e) gst_object_unref(e);
    if (!ok) { gst_object_unref(peer); return NULL; }
    return peer;
}

SfbReceiveInline *sfb_receive_inline_new(GstElement *webrtcbin, const char **why) {
    int n = 0;
    GstElement *src = sfb_only_element(webrtcbin, "nicesrc", &n);
    if (!src) { *why = n == 0 ? "webrtcbin has no nicesrc yet" : "more than one transport (not bundled)"; return NULL; }
    GstPad *src_pad = gst_element_get_static_pad(src, "src");
    gst_object_unref(src);
    GstPad *filter_sink = src_pad ? peer_of(src_pad, "capsfilter") : NULL;
    GstElement *filter = filter_sink ? gst_pad_get_parent_element(filter_sink) : NULL;
    GstPad *filter_src = filter ? gst_element_get_static_pad(filter, "src") : NULL;
    GstPad *queue_sink = filter_src ? peer_of(filter_src, "queue") : NULL;
    GstElement *queue = queue_sink ? gst_pad_get_parent_element(queue_sink) : NULL;
    GstPad *queue_src = queue ? gst_element_get_static_pad(queue, "src") : NULL;
    GstPad *target = queue_src ? gst_pad_get_peer(queue_src) : NULL;
    SfbReceiveInline *r = NULL;
    if (!target) {
        *why = "webrtcbin's receive side is not nicesrc → capsfilter → queue → dtlssrtpdec";
    } else {
        r = g_new0(SfbReceiveInline, 1);
        r->refs = 3;   // the owner's, and one per probe
        r->queue_sink = gst_object_ref(queue_sink);
        r->queue_src = gst_object_ref(queue_src);
        r->target = gst_object_ref(target);
        r->on_arrival_id = gst_pad_add_probe(target, GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_BUFFER_LIST, on_arrival, r, release);
        r->on_packet_id = gst_pad_add_probe(queue_sink, GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_BUFFER_LIST, on_packet, r, release);
    }
    if (target) gst_object_unref(target);
    if (queue_src) gst_object_unref(queue_src);
    if (queue) gst_object_unref(queue);
    if (queue_sink) gst_object_unref(queue_sink);
    if (filter_src) gst_object_unref(filter_src);
    if (filter) gst_object_unref(filter);
    if (filter_sink) gst_object_unref(filter_sink);
    if (src_pad) gst_object_unref(src_pad);
    return r;
}

void sfb_receive_inline_counts(SfbReceiveInline *r, guint64 *inlinePackets, guint64 *queuedPackets) {
    *inlinePackets = __atomic_load_n(&r->inline_packets, __ATOMIC_RELAXED);
    *queuedPackets = __atomic_load_n(&r->queued_packets, __ATOMIC_RELAXED);
}

static void unref(SfbReceiveInline *r) {
    if (!g_atomic_int_dec_and_test(&r->refs)) return;
    gst_object_unref(r->queue_sink);
    gst_object_unref(r->queue_src);
    gst_object_unref(r->target);
    g_free(r);
}

void sfb_receive_inline_close(SfbReceiveInline *r) {
    // Each probe's reference goes when GStreamer is done with it (a running callback finishes first).
    gst_pad_remove_probe(r->queue_sink, r->on_packet_id);
    gst_pad_remove_probe(r->target, r->on_arrival_id);
    unref(r);
}
