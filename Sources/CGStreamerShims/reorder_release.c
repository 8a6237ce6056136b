// A recording that ends (or a publisher who leaves) while a stream's first packets wait for
// lip sync: without this they would wait for a next packet that never comes, and be lost with
// the branch. The event is serialized, so it runs in the stream's order, between two packets.
#include "sfb_reorder_element.h"
#include "CGStreamerShims.h"

static void collect(const GValue *item, gpointer data) {
    GstElement *element = g_value_get_object(item);
    if (SFB_IS_REORDER(element)) *(GSList **)data = g_slist_prepend(*(GSList **)data, gst_object_ref(element));
}

guint sfb_reorders_release_held(GstElement *bin) {
    if (!GST_IS_BIN(bin)) return 0;
    GSList *found = NULL;
    GstIterator *it = gst_bin_iterate_recurse(GST_BIN(bin));
    while (gst_iterator_foreach(it, collect, &found) == GST_ITERATOR_RESYNC) {
        g_slist_free_full(found, gst_object_unref);
        found = NULL;
        gst_iterator_resync(it);
    }
    gst_iterator_free(it);
    // Sent after the iteration, with no bin lock held: a send waits for the stream's packet.
    guint n = 0;
    for (GSList *l = found; l != NULL; l = l->next) {
        GstPad *sink = gst_element_get_static_pad(GST_ELEMENT(l->data), "sink");
        if (sink == NULL) continue;
        if (gst_pad_send_event(sink, gst_event_new_custom(GST_EVENT_CUSTOM_DOWNSTREAM, gst_structure_new_empty(SFB_REORDER_RELEASE_EVENT)))) n++;
        gst_object_unref(sink);
    }
    g_slist_free_full(found, gst_object_unref);
    return n;
}
