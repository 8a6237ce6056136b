// See CDirectRTP.h: the protected packets a direct sender sent last, for answering NACKs with the
// very same bytes. One byte ring (packets never split across its end) and a slot per sequence
// number modulo the slot count; a slot is valid while its bytes have not been written over.
#include "CDirectRTP.h"
#include <string.h>

typedef struct {
    guint64 start;   // where its bytes begin, counted from the ring's first byte ever written
    guint16 seq;
    guint16 len;     // 0: empty
} Slot;

struct SfbSentHistory {
    guint8 *bytes;
    gsize capacity;
    guint64 head;    // bytes written so far (and skipped at the ring's end)
    Slot *slots;
    guint n_slots;
};

SfbSentHistory *sfb_sent_history_new(gsize bytes, guint slots) {
    if (bytes < 2048 || slots == 0) return NULL;
    SfbSentHistory *h = g_new0(SfbSentHistory, 1);
    h->bytes = g_malloc(bytes);
    h->capacity = bytes;
    h->slots = g_new0(Slot, slots);
    h->n_slots = slots;
    return h;
}

void sfb_sent_history_free(SfbSentHistory *h) {
    if (!h) return;
    g_free(h->bytes);
    g_free(h->slots);
    g_free(h);
}

gsize sfb_sent_history_footprint(const SfbSentHistory *h) {
    return h ? sizeof *h + h->capacity + h->n_slots * sizeof(Slot) : 0;
}

void sfb_sent_history_keep(SfbSentHistory *h, guint16 seq, const guint8 *packet, gsize len) {
    if (len == 0 || len > G_MAXUINT16 || len > h->capacity / 2) return;
    gsize at = (gsize)(h->head % h->capacity);
    // Never split a packet: skip the ring's tail when it does not fit.
    if (at + len > h->capacity) { h->head += h->capacity - at; at = 0; }
    memcpy(h->bytes + at, packet, len);
    h->slots[seq % h->n_slots] = (Slot){ .start = h->head, .seq = seq, .len = (guint16)len };
    h->head += len;
}

const guint8 *sfb_sent_history_find(const SfbSentHistory *h, guint16 seq, gsize *len) {
    const Slot *s = &h->slots[seq % h->n_slots];
    // Gone once newer bytes reached its end one lap later.
    if (s->len == 0 || s->seq != seq || h->head > s->start + h->capacity) return NULL;
    *len = s->len;
    return h->bytes + (gsize)(s->start % h->capacity);
}
