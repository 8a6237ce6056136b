// The direct path's RTP and RTCP readers (CDirectRTP.h), apart so that tests and FuzzRTPHeader
// reach them without a pipeline.
#include "CDirectRTP.h"

gsize sfb_rtp_payload_length(const guint8 *p, gsize n) {
    if (n < 12 || (p[0] >> 6) != 2) return 0;
    gsize h = 12 + 4 * (p[0] & 0x0f);
    if (p[0] & 0x10) {
        if (n < h + 4) return 0;
        h += 4 + 4 * (((gsize)p[h + 2] << 8) | p[h + 3]);
    }
    gsize pad = (p[0] & 0x20) ? p[n - 1] : 0;
    return n >= h + pad ? n - h - pad : 0;
}

static guint32 be32(const guint8 *p) { return ((guint32)p[0] << 24) | ((guint32)p[1] << 16) | ((guint32)p[2] << 8) | p[3]; }

guint sfb_rtcp_report_blocks(const guint8 *p, gsize n, guint32 ssrc, gint64 *cumulativeLost, guint32 *jitter) {
    guint found = 0;
    gsize off = 0;
    while (off + 4 <= n && (p[off] >> 6) == 2) {
        gsize size = 4 * ((gsize)((p[off + 2] << 8) | p[off + 3]) + 1);
        guint pt = p[off + 1], count = p[off] & 0x1f;
        if (off + size > n) break;
        gsize blocks = pt == 200 ? off + 28 : pt == 201 ? off + 8 : 0;   // SR: after the sender info
        for (guint i = 0; blocks && i < count && blocks + 24 * (i + 1) <= off + size; i++) {
            const guint8 *b = p + blocks + 24 * i;
            if (be32(b) != ssrc) continue;
            gint32 lost = (gint32)(((guint32)b[5] << 16) | ((guint32)b[6] << 8) | b[7]);
            if (lost & 0x800000) lost -= 0x1000000;   // 24-bit signed
            *cumulativeLost = lost;
            *jitter = be32(b + 12);
            found++;
        }
        off += size;
    }
    return found;
}
