// One RTCP compound per stream reported on, for Janus (sfb_reorder.h: sfb_rtcp_split).
// rtpsession sends every receiver report of a bundled session in one compound: an RR with a
// report block per received SSRC, SDES, and any NACK or PLI appended. Janus 1.1.2 (ice.c,
// janus_ice_cb_nice_recv) gives a compound from a receive-only peer to the stream of its first
// report block only: that one stream gets the round-trip time (and with it `nack_queue_ms`,
// which stays 0, and no packet is kept for retransmission, until an RTT is measured), and
// every NACK in the compound is looked up among that stream's packets. Split, each stream gets
// its own RR, and a stream's feedback rides with it.
#include <string.h>
#include "sfb_reorder.h"

#define RTCP_SR 200
#define RTCP_RR 201
#define RTCP_RTPFB 205
#define RTCP_PSFB 206
#define MAX_PACKETS 64

typedef struct { const guint8 *at; gsize size; guint8 pt; } Packet;

static guint32 be32(const guint8 *p) { return (guint32)p[0] << 24 | (guint32)p[1] << 16 | (guint32)p[2] << 8 | p[3]; }

// Appends one compound (RR with `block` or none, the other packets, the feedback about `ssrc`,
// or with `rest` every feedback matching no block) to `out`; FALSE if it does not fit.
static gboolean append(const Packet *rr, const guint8 *block, const Packet *packets, guint n, guint32 ssrc, gboolean rest,
                       const guint32 *blocks, guint nblocks, guint8 *out, gsize cap, gsize *used, gsize *length) {
    gsize start = *used, at = start;
    gsize rr_size = 8 + (block ? 24 : 0);
    if (at + rr_size > cap) return FALSE;
    out[at] = (guint8)(0x80 | (block ? 1 : 0));
    out[at + 1] = RTCP_RR;
    out[at + 2] = 0;
    out[at + 3] = (guint8)(rr_size / 4 - 1);
    memcpy(out + at + 4, rr->at + 4, 4);
    if (block) memcpy(out + at + 8, block, 24);
    at += rr_size;
    for (guint i = 0; i < n; i++) {
        const Packet *p = &packets[i];
        if (p->pt == RTCP_RR) continue;
        if (p->pt == RTCP_RTPFB || p->pt == RTCP_PSFB) {
            guint32 media = p->size >= 12 ? be32(p->at + 8) : 0;
            gboolean known = FALSE;
            for (guint b = 0; b < nblocks; b++) known = known || blocks[b] == media;
            if (!(media == ssrc || (rest && !known))) continue;
        }
        if (at + p->size > cap) return FALSE;
        memcpy(out + at, p->at, p->size);
        at += p->size;
    }
    *length = at - start;
    *used = at;
    return TRUE;
}

guint sfb_rtcp_split(const guint8 *in, gsize size, guint8 *out, gsize cap, gsize *lengths, guint max) {
    Packet packets[MAX_PACKETS];
    guint n = 0;
    const Packet *rr = NULL;
    for (gsize at = 0; at < size;) {
        if (size - at < 4 || n == MAX_PACKETS || (in[at] >> 6) != 2) return 0;
        gsize length = ((gsize)(in[at + 2] << 8 | in[at + 3]) + 1) * 4;
        if (at + length > size) return 0;
        Packet p = { in + at, length, in[at + 1] };
        if (p.pt == RTCP_SR) return 0;  // a sender's compound: as it is
        packets[n] = p;
        if (p.pt == RTCP_RR && rr == NULL) rr = &packets[n];
        n++;
        at += length;
    }
    if (rr == NULL || rr != &packets[0]) return 0;
    guint rc = rr->at[0] & 0x1f;
    if (rc <= 1 || rc > max || rr->size < 8 + (gsize)rc * 24) return 0;
    guint32 blocks[31];
    for (guint b = 0; b < rc; b++) blocks[b] = be32(rr->at + 8 + b * 24);
    gsize used = 0;
    for (guint b = 0; b < rc; b++) {
        // Feedback about no stream reported on (REMB names none) stays in the first compound,
        // where Janus took it before.
        if (!append(rr, rr->at + 8 + b * 24, packets, n, blocks[b], b == 0, blocks, rc, out, cap, &used, &lengths[b])) return 0;
    }
    return rc;
}

static GstPadProbeReturn split_probe(GstPad *pad, GstPadProbeInfo *info, gpointer data) {
    (void)data;
    GstBuffer *buffer = GST_PAD_PROBE_INFO_BUFFER(info);
    GstMapInfo map;
    if (buffer == NULL || !gst_buffer_map(buffer, &map, GST_MAP_READ)) return GST_PAD_PROBE_OK;
    // Each compound repeats the RR header and the SDES: at most 31 × (32 + the rest).
    gsize cap = 31 * (32 + map.size);
    guint8 *out = g_malloc(cap);
    gsize lengths[31];
    guint parts = sfb_rtcp_split(map.data, map.size, out, cap, lengths, 31);
    gst_buffer_unmap(buffer, &map);
    if (parts == 0) {
        g_free(out);
        return GST_PAD_PROBE_OK;
    }
    // Each part goes on through this pad (and this probe, which passes it: one block each).
    gsize at = 0;
    for (guint i = 0; i < parts; i++) {
        GstBuffer *part = gst_buffer_new_memdup(out + at, lengths[i]);
        gst_buffer_copy_into(part, buffer, GST_BUFFER_COPY_METADATA, 0, (gsize)-1);
        at += lengths[i];
        gst_pad_push(pad, part);
    }
    g_free(out);
    return GST_PAD_PROBE_DROP;
}

static void watch_rtcp_pad(GstElement *rtpbin, GstPad *pad, gpointer data) {
    (void)rtpbin; (void)data;
    gchar *name = gst_pad_get_name(pad);
    if (g_str_has_prefix(name, "send_rtcp_src_")) gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER, split_probe, NULL, NULL);
    g_free(name);
}

static void watch_existing(const GValue *item, gpointer rtpbin) {
    watch_rtcp_pad(GST_ELEMENT(rtpbin), GST_PAD(g_value_get_object(item)), NULL);
}

void sfb_rtcp_split_watch(GstElement *rtpbin) {
    g_signal_connect(rtpbin, "pad-added", G_CALLBACK(watch_rtcp_pad), NULL);
    GstIterator *it = gst_element_iterate_src_pads(rtpbin);
    gst_iterator_foreach(it, watch_existing, rtpbin);
    gst_iterator_free(it);
}
