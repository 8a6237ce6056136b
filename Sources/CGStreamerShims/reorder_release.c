// A recording that ends (or a publisher who leaves, or stops sending) while a stream's first
// packets wait for lip sync: without this they would wait for a next packet that never comes,
// and be lost with the branch (or written only at the end). The event is serialized, so it runs
// in the stream's order, between two packets.
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

static void send_release(GstElement *element, gpointer data) {
    (void)data;
    GstPad *sink = gst_element_get_static_pad(element, "sink");
    if (sink == NULL) return;
    gst_pad_send_event(sink, gst_event_new_custom(GST_EVENT_CUSTOM_DOWNSTREAM, gst_structure_new_empty(SFB_REORDER_RELEASE_EVENT)));
    gst_object_unref(sink);
}

static gboolean hold_over(GstClock *clock, GstClockTime time, GstClockID id, gpointer data) {
    (void)clock; (void)time;
    SfbReorder *self = SFB_REORDER(data);
    GST_OBJECT_LOCK(self);
    gboolean ours = self->release_at == id;
    if (ours) self->release_at = NULL;
    GST_OBJECT_UNLOCK(self);
    if (!ours) return TRUE;
    gst_clock_id_unref(id);  // the element's; the clock holds its own while calling
    // Not on the clock's thread: the send waits for the packet the stream is handling.
    gst_element_call_async(GST_ELEMENT(self), send_release, NULL, NULL);
    return TRUE;
}

void sfb_reorder_schedule_release(SfbReorder *self, GstClockTime running_time) {
    GstClock *clock = gst_element_get_clock(GST_ELEMENT(self));
    if (clock == NULL) return;
    GstClockID id = gst_clock_new_single_shot_id(clock, gst_element_get_base_time(GST_ELEMENT(self)) + running_time);
    gst_object_unref(clock);
    sfb_reorder_cancel_release(self);
    GST_OBJECT_LOCK(self);
    self->release_at = gst_clock_id_ref(id);
    GST_OBJECT_UNLOCK(self);
    // The callback's reference keeps the element alive until the id is freed.
    if (gst_clock_id_wait_async(id, hold_over, gst_object_ref(self), gst_object_unref) != GST_CLOCK_OK) sfb_reorder_cancel_release(self);
    gst_clock_id_unref(id);
}

void sfb_reorder_cancel_release(SfbReorder *self) {
    GST_OBJECT_LOCK(self);
    GstClockID id = self->release_at;
    self->release_at = NULL;
    GST_OBJECT_UNLOCK(self);
    if (id == NULL) return;
    gst_clock_id_unschedule(id);
    gst_clock_id_unref(id);
}
