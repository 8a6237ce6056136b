// See CDirectRTP.h. webrtcbin's transport receive bin is nicesrc → capsfilter → queue →
// dtlssrtpdec; the queue is there so that nicesrc's thread, which also answers STUN, never
// waits while webrtcbin holds the receive side (a blocking probe on the queue's src pad until
// ICE is connected, and again whenever ICE is lost). Past that point it only hands every packet
// to a second thread. This probe, on the queue's sink pad, gives the packet to dtlssrtpdec in
// nicesrc's thread instead, unless the hold is on.
#include "CDirectRTP.h"
#include "elements.h"
#include <string.h>

struct SfbReceiveInline {
    gint refs;
    GstPad *queue_src;   // where webrtcbin's hold (a blocking probe) is put
    GstPad *target;      // dtlssrtpdec's sink pad, the queue's peer
    gint primed;         // a buffer reached `target` through the queue: its sticky events are there
    guint64 inline_packets, queued_packets;   // __atomic, relaxed
};

static void count(guint64 *counter, GstPadProbeInfo *info) {
    guint64 n = (info->type & GST_PAD_PROBE_TYPE_BUFFER_LIST) ? gst_buffer_list_length(GST_PAD_PROBE_INFO_BUFFER_LIST(info)) : 1;
    __atomic_fetch_add(counter, n, __ATOMIC_RELAXED);
}

static GstPadProbeReturn on_packet(GstPad *pad, GstPadProbeInfo *info, gpointer data) {
    (void)pad;
    SfbReceiveInline *r = data;
    // Until the queue has delivered once, dtlssrtpdec has not had the stream's caps and
    // segment (the hold drops events; they follow the first buffer the queue pushes). While
    // the hold is on, the queue takes the packet as it always did.
    if (!g_atomic_int_get(&r->primed) || gst_pad_is_blocked(r->queue_src)) {
        count(&r->queued_packets, info);
        return GST_PAD_PROBE_OK;
    }
    count(&r->inline_packets, info);
    // The probe owns the data it handles; chaining gives it to dtlssrtpdec. The queue's thread
    // may push packets it still holds at the same time: the sink pad's stream lock orders them.
    GstFlowReturn ret = (info->type & GST_PAD_PROBE_TYPE_BUFFER_LIST)
        ? gst_pad_chain_list(r->target, GST_PAD_PROBE_INFO_BUFFER_LIST(info))
        : gst_pad_chain(r->target, GST_PAD_PROBE_INFO_BUFFER(info));
    GST_PAD_PROBE_INFO_DATA(info) = NULL;
    GST_PAD_PROBE_INFO_FLOW_RETURN(info) = ret;
    return GST_PAD_PROBE_HANDLED;
}

static GstPadProbeReturn on_first_delivery(GstPad *pad, GstPadProbeInfo *info, gpointer data) {
    (void)pad; (void)info;
    g_atomic_int_set(&((SfbReceiveInline *)data)->primed, 1);
    return GST_PAD_PROBE_REMOVE;
}

static void release(gpointer data) { sfb_receive_inline_unref(data); }

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
        r->queue_src = gst_object_ref(queue_src);
        r->target = gst_object_ref(target);
        gst_pad_add_probe(target, GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_BUFFER_LIST, on_first_delivery, r, release);
        gst_pad_add_probe(queue_sink, GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_BUFFER_LIST, on_packet, r, release);
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

void sfb_receive_inline_unref(SfbReceiveInline *r) {
    if (!g_atomic_int_dec_and_test(&r->refs)) return;
    gst_object_unref(r->queue_src);
    gst_object_unref(r->target);
    g_free(r);
}
