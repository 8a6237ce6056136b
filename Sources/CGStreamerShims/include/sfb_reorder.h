// A jitter buffer without a thread (`sfbreorder`): webrtcbin's rtpbin makes one rtpjitterbuffer
// per received stream, each with its own streaming thread and timers, and at a recorder's load
// those threads' hand-offs were half its CPU (issue 31). sfbreorder puts packets back in
// sequence order in the thread that received them and pushes every in-order packet at once.
// It could go if rtpjitterbuffer ever got a mode without its output thread.
#ifndef SFB_REORDER_H
#define SFB_REORDER_H

/// The element message an sfbreorder posts at a video stream's first packet, before it holds
/// the packets for lip sync: the recorder asks the sender for a keyframe then.
#define SFB_REORDER_FIRST_VIDEO_PACKET "sfb-first-video-packet"

#include <gst/gst.h>

// The reordering itself, with no GStreamer in it (reorder_ring.c), so it can be tested with
// crafted sequence numbers. Not locked: its owner serializes the calls.
typedef struct SfbReorderRing SfbReorderRing;

typedef enum {
    SFB_REORDER_EMIT,     // `item` goes downstream now, in this order
    SFB_REORDER_LOST,     // `count` packets from `seq` on were given up (a loss)
    SFB_REORDER_DROP,     // `item` is not used (a duplicate, or too late): free it
    SFB_REORDER_REQUEST,  // ask for `seq` again (a NACK); `count` is the request's retry number
} SfbReorderKind;

typedef struct {
    SfbReorderKind kind;
    guint64 seq;   // extended sequence number (never wraps)
    guint count;
    gpointer item;
} SfbReorderOut;

typedef struct {
    guint64 pushed, lost, late, duplicates, requests, repaired, resyncs;
} SfbReorderCounts;

typedef struct {
    guint64 give_up_after;  // a gap older than this (the `now` unit) is given up at the next arrival
    guint64 retry_after;    // a missing packet is asked for again after this long
    guint max_tries;        // requests per missing packet
    gboolean request;       // whether to ask at all (SDP negotiated NACK)
} SfbReorderPolicy;

/// A ring holding up to `capacity` packets (a power of two, 16…4096).
SfbReorderRing *sfb_reorder_ring_new(guint capacity);
/// Frees the ring; `drop` is called on every packet it still holds.
void sfb_reorder_ring_free(SfbReorderRing *ring, void (*drop)(gpointer));
/// Forgets the stream (a flush): `drop` on every packet held; the next packet starts anew.
void sfb_reorder_ring_reset(SfbReorderRing *ring, void (*drop)(gpointer));
/// Room a push or flush may need in `out`.
guint sfb_reorder_ring_out_capacity(const SfbReorderRing *ring);
/// One packet with sequence number `seq` arrived at `now`: what to do, in order, in `out`
/// (at most sfb_reorder_ring_out_capacity entries). Returns how many entries there are.
guint sfb_reorder_ring_push(SfbReorderRing *ring, guint16 seq, guint64 now, gpointer item,
                            const SfbReorderPolicy *policy, SfbReorderOut *out);
/// The end of the stream: every packet held goes out, the gaps before them are lost.
guint sfb_reorder_ring_flush(SfbReorderRing *ring, SfbReorderOut *out);
/// Packets held now.
guint sfb_reorder_ring_held(const SfbReorderRing *ring);
SfbReorderCounts sfb_reorder_ring_counts(const SfbReorderRing *ring);

/// One receiver-report compound into one compound per report block (RR with that block, the
/// other packets, the NACK/PLI about that SSRC; feedback about no reported SSRC with the first),
/// for Janus, which gives a compound to the stream of its first block only (rtcp_split.c).
/// Writes them one after the other into `out` (`cap` bytes), their lengths into `lengths`;
/// returns how many, or 0 when the compound is kept as it is (one block or none, a sender
/// report, more than `max` blocks, malformed, or `out` too small).
guint sfb_rtcp_split(const guint8 *in, gsize size, guint8 *out, gsize cap, gsize *lengths, guint max);

/// Registers the `sfbreorder` element (a static plugin) once per process; FALSE if GStreamer refused.
gboolean sfb_reorder_register(void);

/// Gives webrtcbin's rtpbin an `sfbreorder` instead of an rtpjitterbuffer for each new receive
/// stream (signal `request-jitterbuffer`), and turns on `do-nack` on every transceiver webrtcbin
/// makes (`on-new-transceiver`), so the answer negotiates NACK and the reorder buffers ask for
/// what is missing; and splits the session's RTCP per stream (`sfb_rtcp_split`) for Janus. Call before the first remote description.
/// Returns 0, or 1 (no rtpbin) / 2 (GStreamer too old) / 3 (the element could not be registered).
int sfb_webrtc_reorder_jitterbuffers(GstElement *webrtc);

#endif
