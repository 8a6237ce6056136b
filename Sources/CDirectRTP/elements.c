#include "elements.h"
#include "direct_rtp.h"
#include <string.h>

GstElement *sfb_only_element(GstElement *bin, const char *factory, int *count) {
    GstElement *found = NULL;
    *count = 0;
    GstIterator *it = gst_bin_iterate_recurse(GST_BIN(bin));
    GValue item = G_VALUE_INIT;
    gboolean done = FALSE;
    while (!done) {
        switch (gst_iterator_next(it, &item)) {
        case GST_ITERATOR_OK: {
            GstElement *e = g_value_get_object(&item);
            GstElementFactory *f = gst_element_get_factory(e);
            if (f && strcmp(gst_plugin_feature_get_name(GST_PLUGIN_FEATURE(f)), factory) == 0) {
                if (++*count == 1) found = gst_object_ref(e);
            }
            g_value_reset(&item);
            break;
        }
        case GST_ITERATOR_RESYNC:
            gst_iterator_resync(it);
            if (found) { gst_object_unref(found); found = NULL; }
            *count = 0;
            break;
        default: done = TRUE; break;
        }
    }
    g_value_unset(&item);
    gst_iterator_free(it);
    if (*count != 1 && found) { gst_object_unref(found); found = NULL; }
    return found;
}

// A probe sees one buffer or a list of them: each gets `each`.
void sfb_direct_for_each_buffer(GstPadProbeInfo *info, SfbDirectRTP *d, void (*each)(SfbDirectRTP *, GstBuffer *)) {
    if (info->type & GST_PAD_PROBE_TYPE_BUFFER) {
        each(d, GST_PAD_PROBE_INFO_BUFFER(info));
    } else if (info->type & GST_PAD_PROBE_TYPE_BUFFER_LIST) {
        GstBufferList *list = GST_PAD_PROBE_INFO_BUFFER_LIST(info);
        for (guint i = 0, n = gst_buffer_list_length(list); i < n; i++) each(d, gst_buffer_list_get(list, i));
    }
}
