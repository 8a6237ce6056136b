// The recorder's loss and repair counts: the jitter buffers' `stats` (rtpjitterbuffer's, or
// sfbreorder's with the same fields) summed over a bin.
#include <gst/gst.h>
#include "CGStreamerShims.h"

// Adds an rtpjitterbuffer's (or an sfbreorder's) `stats` field to the sum.
typedef struct { const char *field; guint64 sum; } StatSum;

static void add_jitterbuffer_stat(const GValue *item, gpointer data) {
  GstElement *element = g_value_get_object(item);
  GstElementFactory *factory = gst_element_get_factory(element);
  if (factory == NULL || (g_strcmp0(GST_OBJECT_NAME(factory), "rtpjitterbuffer") != 0
                          && g_strcmp0(GST_OBJECT_NAME(factory), "sfbreorder") != 0)) return;
  GstStructure *stats = NULL;
  g_object_get(element, "stats", &stats, NULL);
  if (stats == NULL) return;
  StatSum *sum = data;
  guint64 value = 0;
  if (gst_structure_get_uint64(stats, sum->field, &value)) sum->sum += value;
  gst_structure_free(stats);
}

static guint64 jitterbuffers_sum(GstElement *bin, const char *field) {
  if (!GST_IS_BIN(bin)) return 0;
  StatSum sum = { field, 0 };
  GstIterator *it = gst_bin_iterate_recurse(GST_BIN(bin));
  while (gst_iterator_foreach(it, add_jitterbuffer_stat, &sum) == GST_ITERATOR_RESYNC) {
    sum.sum = 0;
    gst_iterator_resync(it);
  }
  gst_iterator_free(it);
  return sum.sum;
}

guint64 sfb_jitterbuffers_lost(GstElement *bin) { return jitterbuffers_sum(bin, "num-lost"); }

// `rtx-success-count`: packets asked for again that came (rtpjitterbuffer: by retransmission;
// sfbreorder: a gap it had asked for, filled).
guint64 sfb_jitterbuffers_repaired(GstElement *bin) { return jitterbuffers_sum(bin, "rtx-success-count"); }
