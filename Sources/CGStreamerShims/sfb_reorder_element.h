// sfbreorder's instance (reorder_element.c: the GObject side; reorder_chain.c: the packets).
#ifndef SFB_REORDER_ELEMENT_H
#define SFB_REORDER_ELEMENT_H
#include "sfb_reorder.h"

typedef struct {
    guint latency_ms;
    gboolean do_lost, do_retransmission;
    gint64 ts_offset;
    gboolean offset_set;  // rtpbin set ts-offset (lip sync) since the stream began
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
    // Since when packets arrive more than SFB_REORDER_REBASE off their RTP time (reorder_chain.c).
    GstClockTime off_since;
    // Lip sync (reorder_sync.c): ordered packets (their extended RTP time in the offset field)
    // and lost events wait in `held` from the first packet until rtpbin set this stream's
    // ts-offset, or had its first sender report SFB_REORDER_SYNC_SETTLE ago (the stream the
    // others are delayed to gets none), or until `hold_until`: then all of them are stamped
    // with that offset, so a stream's first second is not stamped without it and the rest with it.
    GQueue held;
    gboolean holding;
    GstClockTime hold_until;
    GstClockTime synced_at;  // when its first sender report went out in handle-sync
    GstClockID release_at;   // the clock's call at `hold_until` (reorder_release.c); object lock
};

/// Janus sends the reports of all a PeerConnection's streams together: this long after its
/// own, the other streams' are in, and rtpbin would have set an offset on this one.
#define SFB_REORDER_SYNC_SETTLE (100 * GST_MSECOND)

/// Packets arriving this far off the time their RTP timestamps give, for SFB_REORDER_REBASE_AFTER
/// on end (a sender that paused without moving its RTP clock, or moved it ahead), restart the
/// stamping from the arrival, as rtpjitterbuffer resyncs. A burst read at once after the
/// recorder itself was held up is not off for that long: its stamps keep the media's timeline.
#define SFB_REORDER_REBASE GST_SECOND
#define SFB_REORDER_REBASE_AFTER (200 * GST_MSECOND)

/// The longest the first packets wait for the first sender report (Janus sends them every
/// second; a stream whose report never comes goes out unsynchronized after this).
#define SFB_REORDER_SYNC_HOLD (2 * GST_SECOND)

GstFlowReturn sfb_reorder_chain(GstPad *pad, GstObject *parent, GstBuffer *buffer);
/// The sink_rtcp request pad and the handle-sync signal (reorder_sync.c).
void sfb_reorder_sync_class_init(GstElementClass *klass);
/// At EOS: every packet held goes out (the gaps before them are losses).
void sfb_reorder_flush(SfbReorder *self);
/// Splits the RTCP leaving `rtpbin` per stream (rtcp_split.c).
void sfb_rtcp_split_watch(GstElement *rtpbin);
/// Forgets what waits for lip sync; the next packets wait again.
void sfb_reorder_drop_held(SfbReorder *self);
/// What waits for lip sync goes out now (in the streaming thread: on the event below).
void sfb_reorder_release_held(SfbReorder *self);
/// At `running_time` the release event is sent even if no packet comes: a sender that stops
/// inside the wait (hung, or muted without leaving) has its packets written then, not at the
/// recording's end. Nothing without a clock (the next packet or the stop releases them).
void sfb_reorder_schedule_release(SfbReorder *self, GstClockTime running_time);
/// Cancels it (the stream is reset).
void sfb_reorder_cancel_release(SfbReorder *self);
/// A serialized custom downstream event, sent to the sink pad (reorder_release.c).
#define SFB_REORDER_RELEASE_EVENT "sfb-reorder-release"

#endif
