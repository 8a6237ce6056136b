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

// RFC 6184 §5.2–5.8: a single NAL unit (1–23), STAP-A (24: 16-bit size, then the NAL), FU-A (28:
// indicator, header with S bit and the NAL type).
gboolean sfb_h264_rtp_starts_idr(const guint8 *p, gsize n) {
    if (n < 1) return FALSE;
    guint type = p[0] & 0x1f;
    if (type == 5) return TRUE;
    if (type == 28) return n >= 2 && (p[1] & 0x80) && (p[1] & 0x1f) == 5;
    if (type != 24) return FALSE;
    for (gsize off = 1; off + 3 <= n;) {
        gsize size = ((gsize)p[off] << 8) | p[off + 1];
        if (size == 0) return FALSE;
        if ((p[off + 2] & 0x1f) == 5) return TRUE;
        off += 2 + size;
    }
    return FALSE;
}

guint sfb_rtcp_keyframe_requests(const guint8 *p, gsize n, guint32 ssrc) {
    guint found = 0;
    gsize off = 0;
    while (off + 4 <= n && (p[off] >> 6) == 2) {
        gsize size = 4 * ((gsize)((p[off + 2] << 8) | p[off + 3]) + 1);
        guint pt = p[off + 1], fmt = p[off] & 0x1f;
        if (off + size > n) break;
        // PLI (RFC 4585 §6.3.1): the media source SSRC names the stream.
        if (pt == 206 && fmt == 1 && size >= 12 && be32(p + off + 8) == ssrc) found++;
        // FIR (RFC 5104 §4.3.1): each 8-byte FCI entry names one.
        if (pt == 206 && fmt == 4)
            for (gsize e = off + 12; e + 8 <= off + size; e += 8) if (be32(p + e) == ssrc) found++;
        off += size;
    }
    return found;
}

guint sfb_rtcp_nacked(const guint8 *p, gsize n, guint32 ssrc, guint16 *seqs, guint capacity, guint *messages) {
    guint found = 0;
    gsize off = 0;
    while (off + 4 <= n && (p[off] >> 6) == 2) {
        gsize size = 4 * ((gsize)((p[off + 2] << 8) | p[off + 3]) + 1);
        guint pt = p[off + 1], fmt = p[off] & 0x1f;
        if (off + size > n) break;
        // Generic NACK (RFC 4585 §6.2.1): after the media source SSRC, 4-byte FCI entries, each a
        // lost packet's sequence number (PID) and a bitmask of the 16 after it (BLP, LSB first).
        if (pt == 205 && fmt == 1 && size >= 16 && be32(p + off + 8) == ssrc) {
            if (messages) (*messages)++;
            for (gsize e = off + 12; e + 4 <= off + size; e += 4) {
                guint16 pid = (guint16)((p[e] << 8) | p[e + 1]);
                guint blp = ((guint)p[e + 2] << 8) | p[e + 3];
                for (guint bit = 0; bit <= 16; bit++) {
                    if (bit > 0 && !(blp & (1u << (bit - 1)))) continue;
                    if (found < capacity) seqs[found] = (guint16)(pid + bit);
                    found++;
                }
            }
        }
        off += size;
    }
    return found;
}
