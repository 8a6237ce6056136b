// sfbreorder's sequence logic (sfb_reorder.h). Packets are kept by extended sequence number in
// a ring of `capacity` slots; [next, end) is the window: `next` is the packet to emit next, `end`
// one past the newest that arrived. A slot in the window holds a packet, or is missing (asked
// for `tries` times, last at `stamp`).
#include "sfb_reorder.h"

// Further than this from the expected packet, a packet does not belong to the stream; three of
// them in a row are a new stream (the sender started again), not a loss.
#define FOREIGN 3000
#define FOREIGN_IN_A_ROW 3

typedef struct {
    gpointer item;   // the packet held, or NULL: missing
    guint64 stamp;   // held: when it arrived; missing: when it was last asked for
    guint tries;     // missing: requests sent
} Slot;

struct SfbReorderRing {
    guint mask;
    Slot *slots;
    gboolean started;
    guint64 next, end;
    guint held;
    guint foreign;
    SfbReorderCounts counts;
};

SfbReorderRing *sfb_reorder_ring_new(guint capacity) {
    if (capacity < 16 || capacity > 4096 || (capacity & (capacity - 1))) return NULL;
    SfbReorderRing *r = g_new0(SfbReorderRing, 1);
    r->mask = capacity - 1;
    r->slots = g_new0(Slot, capacity);
    return r;
}

void sfb_reorder_ring_reset(SfbReorderRing *r, void (*drop)(gpointer)) {
    for (guint i = 0; i <= r->mask; i++) {
        if (r->slots[i].item && drop) drop(r->slots[i].item);
        r->slots[i] = (Slot){ 0 };
    }
    r->started = FALSE;
    r->held = 0;
    r->foreign = 0;
}

void sfb_reorder_ring_free(SfbReorderRing *r, void (*drop)(gpointer)) {
    if (!r) return;
    sfb_reorder_ring_reset(r, drop);
    g_free(r->slots);
    g_free(r);
}

guint sfb_reorder_ring_out_capacity(const SfbReorderRing *r) { return 5 * (r->mask + 1) + 8; }
guint sfb_reorder_ring_held(const SfbReorderRing *r) { return r->held; }
SfbReorderCounts sfb_reorder_ring_counts(const SfbReorderRing *r) { return r->counts; }

static Slot *slot(SfbReorderRing *r, guint64 seq) { return &r->slots[seq & r->mask]; }

static guint put(SfbReorderOut *out, guint n, SfbReorderKind kind, guint64 seq, guint count, gpointer item) {
    out[n] = (SfbReorderOut){ .kind = kind, .seq = seq, .count = count, .item = item };
    return n + 1;
}

// Emits held packets from `next` on until the first missing one.
static guint drain(SfbReorderRing *r, SfbReorderOut *out, guint n) {
    while (r->next < r->end && slot(r, r->next)->item) {
        Slot *s = slot(r, r->next);
        n = put(out, n, SFB_REORDER_EMIT, r->next, 0, s->item);
        *s = (Slot){ 0 };
        r->held--;
        r->counts.pushed++;
        r->next++;
    }
    return n;
}

// Moves `next` up to `target` (≤ end): held packets go out, missing runs are lost.
static guint advance(SfbReorderRing *r, guint64 target, SfbReorderOut *out, guint n) {
    while (r->next < target) {
        n = drain(r, out, n);
        if (r->next >= target) break;
        guint64 first = r->next;
        while (r->next < target && r->next < r->end && !slot(r, r->next)->item) *slot(r, r->next++) = (Slot){ 0 };
        if (r->next == first) r->next = target;  // past `end`: a jump over packets never seen
        if (r->end < r->next) r->end = r->next;
        guint count = (guint)(r->next - first);
        r->counts.lost += count;
        n = put(out, n, SFB_REORDER_LOST, first, count, NULL);
    }
    return drain(r, out, n);
}

// The first packet of a stream, or of a new one after a resync.
static void start(SfbReorderRing *r, guint16 seq) {
    r->started = TRUE;
    r->next = r->end = ((guint64)1 << 32) | seq;
    r->foreign = 0;
}

guint sfb_reorder_ring_push(SfbReorderRing *r, guint16 seq, guint64 now, gpointer item,
                            const SfbReorderPolicy *p, SfbReorderOut *out) {
    guint n = 0;
    if (!r->started) start(r, seq);
    gint32 diff = (gint16)(guint16)(seq - (guint16)r->next);
    if (diff > FOREIGN || diff < -FOREIGN) {
        if (++r->foreign < FOREIGN_IN_A_ROW) {
            r->counts.late++;
            return put(out, n, SFB_REORDER_DROP, 0, 0, item);
        }
        // A new stream: what the old one held goes out first.
        n = advance(r, r->end, out, n);
        r->counts.resyncs++;
        start(r, seq);
        diff = 0;
    }
    r->foreign = 0;
    guint64 ext = r->next + diff;  // diff < 0 wraps below next: late
    if (diff < 0) {
        r->counts.late++;
        return put(out, n, SFB_REORDER_DROP, ext, 0, item);
    }
    guint64 capacity = (guint64)r->mask + 1;
    if (ext >= r->next + capacity) {
        // Too far ahead to wait for what is missing before it: the oldest gaps are given up.
        n = advance(r, ext - capacity + 1, out, n);
    }
    if (ext < r->end) {
        Slot *s = slot(r, ext);
        if (s->item) {
            r->counts.duplicates++;
            return put(out, n, SFB_REORDER_DROP, ext, 0, item);
        }
        if (s->tries) r->counts.repaired++;
        *s = (Slot){ .item = item, .stamp = now };
        r->held++;
    } else {
        // New packets missing before this one: asked for at once.
        for (guint64 m = r->end; m < ext; m++) {
            *slot(r, m) = (Slot){ .stamp = now };
            if (p->request && p->max_tries) {
                slot(r, m)->tries = 1;
                r->counts.requests++;
                n = put(out, n, SFB_REORDER_REQUEST, m, 0, NULL);
            }
        }
        *slot(r, ext) = (Slot){ .item = item, .stamp = now };
        r->held++;
        r->end = ext + 1;
    }
    n = drain(r, out, n);
    // Something still waits behind a gap: give up gaps older than the bound, ask again for the rest.
    while (r->next < r->end) {
        guint64 h = r->next;
        while (!slot(r, h)->item) h++;  // the window's last slot is always held
        if (now < slot(r, h)->stamp || now - slot(r, h)->stamp < p->give_up_after) break;
        n = advance(r, h, out, n);
    }
    for (guint64 m = r->next; p->request && m < r->end; m++) {
        Slot *s = slot(r, m);
        if (s->item || !s->tries || s->tries >= p->max_tries || now < s->stamp + p->retry_after) continue;
        n = put(out, n, SFB_REORDER_REQUEST, m, s->tries, NULL);
        s->tries++;
        s->stamp = now;
        r->counts.requests++;
    }
    return n;
}

guint sfb_reorder_ring_flush(SfbReorderRing *r, SfbReorderOut *out) {
    return r->started ? advance(r, r->end, out, 0) : 0;
}
