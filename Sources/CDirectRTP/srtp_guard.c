// See CDirectRTP.h. The direct sender protects RTP with the key srtpenc holds; if both ever
// protected one SSRC, the same keystream would encrypt two packets (RFC 3711 §9.1). This guard
// makes that impossible whatever the caller's order: it sees every RTP packet on its way into
// srtpenc, and under one lock an SSRC is either srtpenc's (seen there, or sent by rtpsession
// before the guard existed) or the direct sender's (claimed), never both.
#include "CDirectRTP.h"
#include <string.h>

#define MAX_SSRCS 16

struct SfbSrtpGuard {
    gint refs;
    pthread_mutex_t lock;
    guint32 seen[MAX_SSRCS];      // SSRCs srtpenc has been given
    guint n_seen;
    gboolean overflow;            // more than MAX_SSRCS: every claim is refused (fail closed)
    guint32 claimed[MAX_SSRCS];   // SSRCs the direct sender owns; srtpenc never gets them
    guint n_claimed;
    guint64 blocked;              // packets kept from srtpenc
};

static gboolean contains(const guint32 *set, guint n, guint32 ssrc) {
    for (guint i = 0; i < n; i++) if (set[i] == ssrc) return TRUE;
    return FALSE;
}

// Called with the lock held: FALSE if the packet is a claimed SSRC's and must not reach srtpenc.
static gboolean admit(SfbSrtpGuard *g, GstBuffer *buffer) {
    guint8 h[12];
    // Not RTP 2: srtpenc refuses it itself.
    if (gst_buffer_extract(buffer, 0, h, 12) != 12 || (h[0] >> 6) != 2) return TRUE;
    guint32 ssrc = ((guint32)h[8] << 24) | ((guint32)h[9] << 16) | ((guint32)h[10] << 8) | h[11];
    if (contains(g->claimed, g->n_claimed, ssrc)) { g->blocked++; return FALSE; }
    if (!contains(g->seen, g->n_seen, ssrc)) {
        if (g->n_seen < MAX_SSRCS) g->seen[g->n_seen++] = ssrc;
        else g->overflow = TRUE;
    }
    return TRUE;
}

static GstPadProbeReturn on_rtp(GstPad *pad, GstPadProbeInfo *info, gpointer data) {
    (void)pad;
    SfbSrtpGuard *g = data;
    gboolean pass = TRUE;
    pthread_mutex_lock(&g->lock);
    if (info->type & GST_PAD_PROBE_TYPE_BUFFER) {
        pass = admit(g, GST_PAD_PROBE_INFO_BUFFER(info));
    } else if (info->type & GST_PAD_PROBE_TYPE_BUFFER_LIST) {
        // A list with one claimed packet goes whole (fail closed): webrtcbin sends lists of one SSRC.
        GstBufferList *list = GST_PAD_PROBE_INFO_BUFFER_LIST(info);
        for (guint i = 0, n = gst_buffer_list_length(list); i < n; i++) pass = admit(g, gst_buffer_list_get(list, i)) && pass;
    }
    pthread_mutex_unlock(&g->lock);
    return pass ? GST_PAD_PROBE_OK : GST_PAD_PROBE_DROP;
}

static void release(gpointer data) { sfb_srtp_guard_unref(data); }

// RTP inputs by template, not name: a pad requested without a name is called "padN".
static void guard_pad(SfbSrtpGuard *g, GstPad *pad) {
    GstPadTemplate *t = GST_PAD_DIRECTION(pad) == GST_PAD_SINK ? gst_pad_get_pad_template(pad) : NULL;
    gboolean rtp = t && g_str_has_prefix(GST_PAD_TEMPLATE_NAME_TEMPLATE(t), "rtp_sink");
    if (t) gst_object_unref(t);
    if (!rtp) return;
    g_atomic_int_inc(&g->refs);
    gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_BUFFER_LIST, on_rtp, g, release);
}

static void on_pad_added(GstElement *enc, GstPad *pad, gpointer data) { (void)enc; guard_pad(data, pad); }

static void release_closure(gpointer data, GClosure *closure) { (void)closure; sfb_srtp_guard_unref(data); }

// SSRCs rtpsession has sent RTP from (its internal sources' packets-sent), into `seen`.
static void learn_sent(SfbSrtpGuard *g, GstElement *session) {
    GstStructure *stats = NULL;
    g_object_get(session, "stats", &stats, NULL);
    const GValue *sources = stats ? gst_structure_get_value(stats, "source-stats") : NULL;
    G_GNUC_BEGIN_IGNORE_DEPRECATIONS   // rtpsession's "source-stats" is a GValueArray
    GValueArray *array = sources && G_VALUE_HOLDS(sources, g_value_array_get_type()) ? g_value_get_boxed(sources) : NULL;
    for (guint i = 0; array && i < array->n_values; i++) {
        const GstStructure *s = gst_value_get_structure(g_value_array_get_nth(array, i));
        gboolean internal = FALSE;
        guint ssrc = 0;
        guint64 sent = 0;
        if (!s || !gst_structure_get_boolean(s, "internal", &internal) || !internal
            || !gst_structure_get_uint(s, "ssrc", &ssrc) || !gst_structure_get_uint64(s, "packets-sent", &sent) || sent == 0) continue;
        pthread_mutex_lock(&g->lock);
        if (!contains(g->seen, g->n_seen, ssrc)) {
            if (g->n_seen < MAX_SSRCS) g->seen[g->n_seen++] = ssrc;
            else g->overflow = TRUE;
        }
        pthread_mutex_unlock(&g->lock);
    }
    G_GNUC_END_IGNORE_DEPRECATIONS
    if (stats) gst_structure_free(stats);
}

SfbSrtpGuard *sfb_srtp_guard_new(GstElement *srtpenc, GstElement *rtpsession) {
    SfbSrtpGuard *g = g_new0(SfbSrtpGuard, 1);
    g->refs = 1;
    pthread_mutex_init(&g->lock, NULL);
    // Pads srtpenc gets later (a new session) are guarded too; the handler holds a reference,
    // dropped when srtpenc goes.
    g_atomic_int_inc(&g->refs);
    g_signal_connect_data(srtpenc, "pad-added", G_CALLBACK(on_pad_added), g, release_closure, 0);
    GstIterator *it = gst_element_iterate_sink_pads(srtpenc);
    GValue item = G_VALUE_INIT;
    gboolean done = FALSE;
    while (!done) {
        switch (gst_iterator_next(it, &item)) {
        case GST_ITERATOR_OK:
            // A resync may offer a pad twice: two probes on it admit the same way.
            guard_pad(g, g_value_get_object(&item));
            g_value_reset(&item);
            break;
        case GST_ITERATOR_RESYNC: gst_iterator_resync(it); break;
        default: done = TRUE; break;
        }
    }
    g_value_unset(&item);
    gst_iterator_free(it);
    // After the probes: a packet that passed srtpenc's input before them was counted by
    // rtpsession (upstream) before; one after them is seen by them.
    if (rtpsession) learn_sent(g, rtpsession);
    return g;
}

gboolean sfb_srtp_guard_claim(SfbSrtpGuard *g, guint32 ssrc) {
    pthread_mutex_lock(&g->lock);
    gboolean ok = !g->overflow && !contains(g->seen, g->n_seen, ssrc)
        && (contains(g->claimed, g->n_claimed, ssrc) || g->n_claimed < MAX_SSRCS);
    if (ok && !contains(g->claimed, g->n_claimed, ssrc)) g->claimed[g->n_claimed++] = ssrc;
    pthread_mutex_unlock(&g->lock);
    return ok;
}

guint64 sfb_srtp_guard_blocked(SfbSrtpGuard *g) {
    pthread_mutex_lock(&g->lock);
    guint64 n = g->blocked;
    pthread_mutex_unlock(&g->lock);
    return n;
}

void sfb_srtp_guard_unref(SfbSrtpGuard *g) {
    if (!g_atomic_int_dec_and_test(&g->refs)) return;
    pthread_mutex_destroy(&g->lock);
    g_free(g);
}
