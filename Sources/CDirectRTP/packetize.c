// See CDirectRTP.h: an access unit cut into RTP payloads as rtph264pay (1.22) cuts it with
// aggregate-mode=zero-latency and config-interval=-1 on avc, alignment=au input, so the direct
// frame path sends what the payloader would have: the parameter sets before each IDR's first
// slice, small NAL units bundled in STAP-A until one would overflow the MTU, a large one as
// FU-A, the marker on the access unit's last packet. Its tests compare it with rtph264pay.
#include "CDirectRTP.h"
#include <string.h>

#define RTP_HEADER 12
// NAL units per STAP-A; an access unit with more small ones than this starts a new STAP-A
// (rtph264pay bundles without a count limit; x264's units never come near).
#define BUNDLE_MAX 64

typedef struct {
    const SfbH264Params *params;
    guint8 *out;
    SfbPayloadEmit emit;
    void *ctx;
    const guint8 *bundle[BUNDLE_MAX];
    gsize bundle_len[BUNDLE_MAX];
    guint n_bundle;
    gsize bundle_size;   // rtph264pay's: 1 (the STAP-A header) + 2 + size per unit; 0 if none
    gboolean bundle_vcl;
    guint packets;
} Pay;

static void emit(Pay *s, gsize len, gboolean marker) {
    s->emit(s->ctx, s->out, len, marker);
    s->packets++;
}

static void send_bundle(Pay *s, gboolean marker) {
    if (s->bundle_size == 0) return;
    gsize len = 0;
    if (s->n_bundle == 1) {
        memcpy(s->out, s->bundle[0], s->bundle_len[0]);
        len = s->bundle_len[0];
    } else {
        guint8 header = 24;
        len = 1;
        for (guint i = 0; i < s->n_bundle; i++) {
            guint8 nal = s->bundle[i][0];
            if (nal & 0x80) header |= 0x80;                                       // F bit
            if ((nal & 0x60) > (header & 0x60)) header = (header & 0x9f) | (nal & 0x60);   // highest NRI
            s->out[len] = (guint8)(s->bundle_len[i] >> 8);
            s->out[len + 1] = (guint8)s->bundle_len[i];
            memcpy(s->out + len + 2, s->bundle[i], s->bundle_len[i]);
            len += 2 + s->bundle_len[i];
        }
        s->out[0] = header;
    }
    s->n_bundle = 0;
    s->bundle_size = 0;
    s->bundle_vcl = FALSE;
    emit(s, len, marker);
}

static void fragment(Pay *s, const guint8 *nal, gsize size, gboolean end_of_au) {
    guint mtu = s->params->mtu;
    if (RTP_HEADER + size <= mtu) {
        memcpy(s->out, nal, size);
        emit(s, size, end_of_au);
        return;
    }
    gsize max = mtu - 2 - RTP_HEADER;
    for (gsize pos = 1; pos < size; pos += max) {
        gsize remaining = size - pos, n = MIN(remaining, max);
        gboolean first = pos == 1, last = remaining <= max;
        s->out[0] = (nal[0] & 0x60) | 28;
        s->out[1] = (guint8)((first << 7) | (last << 6) | (nal[0] & 0x1f));
        memcpy(s->out + 2, nal + pos, n);
        emit(s, 2 + n, last && end_of_au);
    }
}

static void bundle(Pay *s, const guint8 *nal, gsize size, gboolean end_of_au) {
    guint mtu = s->params->mtu;
    gsize pay_size = 2 + size;
    if (RTP_HEADER + 1 + pay_size > mtu) {
        send_bundle(s, FALSE);
        fragment(s, nal, size, end_of_au);
        return;
    }
    if (RTP_HEADER + s->bundle_size + pay_size > mtu || s->n_bundle == BUNDLE_MAX) send_bundle(s, FALSE);
    if (s->bundle_size == 0) s->bundle_size = 1;
    s->bundle[s->n_bundle] = nal;
    s->bundle_len[s->n_bundle++] = size;
    s->bundle_size += pay_size;
    guint type = nal[0] & 0x1f;
    if ((type >= 1 && type <= 5) || type == 14 || (type >= 20 && type <= 23)) s->bundle_vcl = TRUE;
    if (end_of_au) send_bundle(s, TRUE);
}

static void payload_nal(Pay *s, const guint8 *nal, gsize size, gboolean end_of_au) {
    if (size == 0) return;
    guint type = nal[0] & 0x1f;
    if (type >= 24 && type <= 27) return;   // reserved for aggregation: rtph264pay drops them
    // An IDR's first slice (first_mb_in_slice 0: its exp-Golomb code starts with a 1 bit) has
    // the parameter sets sent before it. ECall leaves a slice's first bytes clear, so this
    // reads the same on a sealed slice.
    if (type == 5 && size >= 2 && (nal[1] & 0x80))
        for (guint i = 0; i < s->params->n_sets; i++) payload_nal(s, s->params->bytes + s->params->set_offset[i], s->params->set_len[i], FALSE);
    bundle(s, nal, size, end_of_au);
}

guint sfb_h264_packetize(const SfbH264Params *params, const guint8 *au, gsize size, guint8 *out, SfbPayloadEmit emit_payload, void *ctx) {
    Pay s;
    memset(&s, 0, sizeof s);
    s.params = params;
    s.out = out;
    s.emit = emit_payload;
    s.ctx = ctx;
    guint nls = params->nal_length_size;
    gsize remaining = size, off = 0;
    while (remaining > nls) {
        gsize len = 0;
        for (guint i = 0; i < nls; i++) len = (len << 8) | au[off + i];
        off += nls;
        remaining -= nls;
        if (len > remaining) len = remaining;
        gboolean end_of_au = remaining - len <= nls;
        payload_nal(&s, au + off, len, end_of_au);
        off += len;
        remaining -= len;
    }
    // Only a bundle of parameter sets or SEI can be left (the last unit ends the access unit).
    if (s.bundle_size > 0) send_bundle(&s, FALSE);
    return s.packets;
}

gboolean sfb_h264_params_parse(SfbH264Params *params, const guint8 *avcc, gsize size) {
    // ISO/IEC 14496-15 AVCDecoderConfigurationRecord: version, profile, compatibility, level,
    // lengthSizeMinusOne, then the SPS and PPS, each with a 16-bit length.
    guint mtu = params->mtu;
    memset(params, 0, sizeof *params);
    params->mtu = mtu;
    if (size < 7 || avcc[0] != 1) return FALSE;
    params->nal_length_size = (avcc[4] & 3) + 1;
    gsize off = 5;
    for (int kind = 0; kind < 2; kind++) {
        if (off >= size) return FALSE;
        guint count = kind == 0 ? (avcc[off] & 0x1f) : avcc[off];
        off++;
        for (guint i = 0; i < count; i++) {
            if (off + 2 > size) return FALSE;
            gsize len = ((gsize)avcc[off] << 8) | avcc[off + 1];
            off += 2;
            if (off + len > size || len > sizeof params->bytes - params->used || params->n_sets == SFB_H264_MAX_SETS) return FALSE;
            memcpy(params->bytes + params->used, avcc + off, len);
            params->set_offset[params->n_sets] = params->used;
            params->set_len[params->n_sets++] = len;
            params->used += len;
            off += len;
        }
    }
    return TRUE;
}
