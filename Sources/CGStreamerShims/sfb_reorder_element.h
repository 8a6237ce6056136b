// sfbreorder's instance (reorder_element.c: the GObject side; reorder_chain.c: the packets).
#ifndef SFB_REORDER_ELEMENT_H
#define SFB_REORDER_ELEMENT_H
#include "sfb_reorder.h"

typedef struct {
    guint latency_ms;
    gboolean do_lost, do_retransmission;
    gint64 ts_offset;
} SfbReorderSettings;

GST_DEBUG_CATEGORY_EXTERN(sfb_reorder_debug);
#define GST_CAT_DEFAULT sfb_reorder_debug

#define SFB_TYPE_REORDER (sfb_reorder_get_type())
G_DECLARE_FINAL_TYPE(SfbReorder, sfb_reorder, SFB, REORDER, GstElement)

struct _SfbReorder {
    GstElement parent;
    GstPad *sinkpad, *srcpad;
    GstPad *rtcppad;  // requested by rtpbin for lip sync (reorder_sync.c)
    // Properties, and the ring with its counts: under the object lock.
    SfbReorderSettings settings;
    SfbReorderRing *ring;
    // The sink pad's stream lock (chain and serialized events) guards the rest.
    SfbReorderOut *out;
    GstSegment segment;
    gint clock_rate, asked_pt;
    guint32 ssrc;  // the stream's, from its first packet
    // Timestamps: the first packet's arrival (running time) and extended RTP timestamp.
    gboolean have_base;
    GstClockTime base_time;
    guint64 base_rtp, last_rtp;
    GstClockTime last_pts;
    gboolean discont;
};

GstFlowReturn sfb_reorder_chain(GstPad *pad, GstObject *parent, GstBuffer *buffer);
/// The sink_rtcp request pad and the handle-sync signal (reorder_sync.c).
void sfb_reorder_sync_class_init(GstElementClass *klass);
/// At EOS: every packet held goes out (the gaps before them are losses).
void sfb_reorder_flush(SfbReorder *self);

#endif
