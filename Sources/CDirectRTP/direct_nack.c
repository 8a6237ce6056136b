// See CDirectRTP.h: the peer's NACKs (RFC 4585 generic NACK) about what the direct sender sent,
// answered with the very SRTP packet sent before. No RTX is negotiated (the offer has
// `a=rtcp-fb:96 nack`, no rtx payload), so the answer is the original packet: the peer never
// received its SRTP index (it was lost), so its replay window takes it; a copy of one that did
// arrive is dropped there as a replay, and harms nothing.
#include "direct_rtp.h"

// Packets answered per RTCP packet; more are counted as unavailable.
#define MAX_NACKED 128

static guint32 ssrc_of(const guint8 *p) { return ((guint32)p[8] << 24) | ((guint32)p[9] << 16) | ((guint32)p[10] << 8) | p[11]; }

void sfb_direct_answer_nacks(SfbDirectRTP *d, const guint8 *rtcp, gsize size) {
    gint n = __atomic_load_n(&d->n_ssrcs, __ATOMIC_ACQUIRE);
    for (gint i = 0; i < n; i++) {
        guint16 seqs[MAX_NACKED];
        guint messages = 0;
        guint asked = sfb_rtcp_nacked(rtcp, size, d->ssrcs[i], seqs, MAX_NACKED, &messages);
        if (messages == 0) continue;
        __atomic_fetch_add(&d->nacks, messages, __ATOMIC_RELAXED);
        __atomic_fetch_add(&d->nacked, asked, __ATOMIC_RELAXED);
        if (!__atomic_load_n(&d->answer_nacks, __ATOMIC_RELAXED)) continue;
        guint resent = 0, unavailable = asked > MAX_NACKED ? asked - MAX_NACKED : 0, failed = 0;
        pthread_mutex_lock(&d->lock);
        for (guint k = 0; k < MIN(asked, MAX_NACKED); k++) {
            gsize len = 0;
            const guint8 *p = d->history ? sfb_sent_history_find(d->history, seqs[k], &len) : NULL;
            // The history holds video's packets: one of another SSRC (audio's) is not there.
            if (!p || len < 12 || ssrc_of(p) != d->ssrcs[i]) unavailable++;
            else if (sfb_direct_transmit_locked(d, p, len)) resent++;
            else failed++;
        }
        pthread_mutex_unlock(&d->lock);
        if (resent) __atomic_fetch_add(&d->retransmitted, resent, __ATOMIC_RELAXED);
        if (unavailable) __atomic_fetch_add(&d->nack_unavailable, unavailable, __ATOMIC_RELAXED);
        if (failed) __atomic_fetch_add(&d->dropped, failed, __ATOMIC_RELAXED);
    }
}

void sfb_direct_rtp_nacks(SfbDirectRTP *d, guint64 *nacks, guint64 *requested, guint64 *retransmitted, guint64 *unavailable) {
    *nacks = __atomic_load_n(&d->nacks, __ATOMIC_RELAXED);
    *requested = __atomic_load_n(&d->nacked, __ATOMIC_RELAXED);
    *retransmitted = __atomic_load_n(&d->retransmitted, __ATOMIC_RELAXED);
    *unavailable = __atomic_load_n(&d->nack_unavailable, __ATOMIC_RELAXED);
}

void sfb_direct_rtp_answer_nacks(SfbDirectRTP *d, gboolean answer) {
    __atomic_store_n(&d->answer_nacks, answer ? 1 : 0, __ATOMIC_RELAXED);
}
