// See CDirectRTP.h. libsrtp2 and libnice are the very libraries GStreamer's srtp and nice
// plugins loaded (found by soname, RTLD_NOLOAD): sfubot links neither, so the OpenSSL build of
// libsrtp that GStreamerKit preloads is the one used here too, already initialised by srtpenc.
#include "CDirectRTP.h"
#include "elements.h"
#include <dlfcn.h>
#include <string.h>
#include <sys/socket.h>
#include <nice/agent.h>
#include <srtp2/srtp.h>

// Enums of GStreamer's srtp plugin (gstsrtp-enumtypes), read from srtpenc as plain ints.
enum { CIPHER_AES_128_ICM = 1, CIPHER_AES_256_ICM = 2, CIPHER_AES_128_GCM = 3, CIPHER_AES_256_GCM = 4 };
enum { AUTH_NULL = 0, AUTH_HMAC_SHA1_32 = 1, AUTH_HMAC_SHA1_80 = 2 };

// The largest RTP packet sent; larger ones are dropped and counted (an MTU-sized packet fits).
#define MAX_RTP 1500

static struct {
    __typeof__(srtp_create) *create;
    __typeof__(srtp_protect) *protect;
    __typeof__(srtp_dealloc) *dealloc;
    __typeof__(srtp_crypto_policy_set_rtp_default) *aes128_sha80;
    __typeof__(srtp_crypto_policy_set_aes_cm_128_hmac_sha1_32) *aes128_sha32;
    __typeof__(srtp_crypto_policy_set_aes_cm_256_hmac_sha1_80) *aes256_sha80;
    __typeof__(srtp_crypto_policy_set_aes_cm_256_hmac_sha1_32) *aes256_sha32;
    __typeof__(srtp_crypto_policy_set_aes_gcm_128_16_auth) *gcm128;
    __typeof__(srtp_crypto_policy_set_aes_gcm_256_16_auth) *gcm256;
    __typeof__(nice_agent_send) *nice_send;
    __typeof__(nice_agent_get_selected_pair) *selected_pair;
    __typeof__(nice_agent_get_selected_socket) *selected_socket;
    __typeof__(nice_agent_get_component_state) *component_state;
    const char *missing;
} lib;

static gpointer resolve(gpointer unused) {
    (void)unused;
    void *srtp = dlopen("libsrtp2.so.1", RTLD_NOW | RTLD_NOLOAD);
    void *nice = dlopen("libnice.so.10", RTLD_NOW | RTLD_NOLOAD);
    if (!srtp) { lib.missing = "libsrtp2 is not loaded (no srtpenc yet?)"; return NULL; }
    if (!nice) { lib.missing = "libnice is not loaded (no nicesink yet?)"; return NULL; }
    lib.create = dlsym(srtp, "srtp_create");
    lib.protect = dlsym(srtp, "srtp_protect");
    lib.dealloc = dlsym(srtp, "srtp_dealloc");
    lib.aes128_sha80 = dlsym(srtp, "srtp_crypto_policy_set_rtp_default");
    lib.aes128_sha32 = dlsym(srtp, "srtp_crypto_policy_set_aes_cm_128_hmac_sha1_32");
    lib.aes256_sha80 = dlsym(srtp, "srtp_crypto_policy_set_aes_cm_256_hmac_sha1_80");
    lib.aes256_sha32 = dlsym(srtp, "srtp_crypto_policy_set_aes_cm_256_hmac_sha1_32");
    lib.gcm128 = dlsym(srtp, "srtp_crypto_policy_set_aes_gcm_128_16_auth");
    lib.gcm256 = dlsym(srtp, "srtp_crypto_policy_set_aes_gcm_256_16_auth");
    lib.nice_send = dlsym(nice, "nice_agent_send");
    lib.selected_pair = dlsym(nice, "nice_agent_get_selected_pair");
    lib.selected_socket = dlsym(nice, "nice_agent_get_selected_socket");
    lib.component_state = dlsym(nice, "nice_agent_get_component_state");
    if (!lib.create || !lib.protect || !lib.dealloc || !lib.aes128_sha80 || !lib.aes128_sha32 || !lib.aes256_sha80
        || !lib.aes256_sha32 || !lib.gcm128 || !lib.gcm256 || !lib.nice_send || !lib.selected_pair
        || !lib.selected_socket || !lib.component_state)
        lib.missing = "a libsrtp2 or libnice function is missing";
    return NULL;
}

struct SfbDirectRTP {
    gint refs;
    GMutex lock;            // the srtp session and the route (one pushing thread in practice)
    srtp_t session;
    NiceAgent *agent;
    guint stream, component;
    // The route: the selected pair's UDP socket and remote address, sent to with sendto(2)
    // (libnice's send takes the agent lock and goes through GSocket: 6 % of a bot's CPU).
    // Re-read after libnice says the pair or the component's state changed; fd -1: no
    // plain UDP route (relayed, not ready), nice_agent_send decides.
    gint route_stale;
    GSocket *socket;
    int fd;
    struct sockaddr_storage to;
    socklen_t to_len;
    gulong on_pair, on_state;
    guint64 packets, payload_bytes, dropped;   // __atomic, relaxed: counters only
    // What the peer's receiver reports say of the SSRC sent (rtpsession never saw it, so it
    // ignores those report blocks): __atomic, relaxed.
    guint32 ssrc;
    gint ssrc_known;
    guint64 reports;
    gint64 cumulative_lost;
    guint32 jitter;
};

// The RTP policy for srtpenc's cipher and auth, and the master key + salt length it takes.
static gboolean set_policy(srtp_crypto_policy_t *p, int cipher, int auth, gsize *key_len) {
    if (cipher == CIPHER_AES_128_ICM && auth == AUTH_HMAC_SHA1_80) { lib.aes128_sha80(p); *key_len = 30; }
    else if (cipher == CIPHER_AES_128_ICM && auth == AUTH_HMAC_SHA1_32) { lib.aes128_sha32(p); *key_len = 30; }
    else if (cipher == CIPHER_AES_256_ICM && auth == AUTH_HMAC_SHA1_80) { lib.aes256_sha80(p); *key_len = 46; }
    else if (cipher == CIPHER_AES_256_ICM && auth == AUTH_HMAC_SHA1_32) { lib.aes256_sha32(p); *key_len = 46; }
    else if (cipher == CIPHER_AES_128_GCM && auth == AUTH_NULL) { lib.gcm128(p); *key_len = 28; }
    else if (cipher == CIPHER_AES_256_GCM && auth == AUTH_NULL) { lib.gcm256(p); *key_len = 44; }
    else return FALSE;
    return TRUE;
}

static void on_pair_changed(NiceAgent *agent, guint stream, guint component, NiceCandidate *local, NiceCandidate *remote, gpointer data) {
    (void)agent; (void)stream; (void)component; (void)local; (void)remote;
    g_atomic_int_set(&((SfbDirectRTP *)data)->route_stale, 1);
}

static void on_state_changed(NiceAgent *agent, guint stream, guint component, guint state, gpointer data) {
    (void)agent; (void)stream; (void)component; (void)state;
    g_atomic_int_set(&((SfbDirectRTP *)data)->route_stale, 1);
}

static void release_closure(gpointer data, GClosure *closure) {
    (void)closure;
    sfb_direct_rtp_unref(data);
}

SfbDirectRTP *sfb_direct_rtp_new(GstElement *webrtcbin, const char **why) {
    static GOnce once = G_ONCE_INIT;
    g_once(&once, resolve, NULL);
    if (lib.missing) { *why = lib.missing; return NULL; }
    int n = 0;
    GstElement *enc = sfb_only_element(webrtcbin, "srtpenc", &n);
    if (!enc) { *why = n == 0 ? "webrtcbin has no srtpenc yet" : "more than one transport (not bundled)"; return NULL; }
    GstElement *sink = sfb_only_element(webrtcbin, "nicesink", &n);
    if (!sink) { gst_object_unref(enc); *why = n == 0 ? "webrtcbin has no nicesink yet" : "more than one transport (not bundled)"; return NULL; }

    GstBuffer *key = NULL, *mki = NULL;
    gint cipher = 0, auth = 0, rtcp_cipher = 0;
    guint window = 0;
    g_object_get(enc, "key", &key, "mki", &mki, "rtp-cipher", &cipher, "rtp-auth", &auth,
                 "rtcp-cipher", &rtcp_cipher, "replay-window-size", &window, NULL);
    NiceAgent *agent = NULL;
    guint stream = 0, component = 0;
    g_object_get(sink, "agent", &agent, "stream", &stream, "component", &component, NULL);
    gst_object_unref(enc);
    gst_object_unref(sink);

    SfbDirectRTP *d = NULL;
    srtp_policy_t policy;
    memset(&policy, 0, sizeof policy);
    gsize key_len = 0;
    GstMapInfo map = GST_MAP_INFO_INIT;
    if (!agent || stream == 0 || component == 0) { *why = "nicesink has no ICE agent or stream"; goto out; }
    if (!key) { *why = "srtpenc has no key yet (DTLS not done)"; goto out; }
    if (mki) { *why = "srtpenc uses an MKI"; goto out; }
    if (!set_policy(&policy.rtp, cipher, auth, &key_len)) { *why = "srtpenc's cipher is not one this path knows"; goto out; }
    // libsrtp checks the RTCP policy too; srtpenc's RTCP is the same profile as its RTP.
    policy.rtcp = policy.rtp;
    (void)rtcp_cipher;
    if (gst_buffer_get_size(key) < key_len || !gst_buffer_map(key, &map, GST_MAP_READ)) { *why = "srtpenc's key is too short"; goto out; }
    policy.ssrc.type = ssrc_any_outbound;
    policy.key = map.data;
    policy.window_size = window;
    policy.allow_repeat_tx = 0;

    d = g_new0(SfbDirectRTP, 1);
    d->refs = 1;
    g_mutex_init(&d->lock);
    // srtp_create copies the key material: the mapped key is released below.
    if (lib.create(&d->session, &policy) != srtp_err_status_ok) {
        g_mutex_clear(&d->lock);
        g_free(d);
        d = NULL;
        *why = "libsrtp refused srtpenc's key";
        goto out;
    }
    d->agent = g_object_ref(agent);
    d->stream = stream;
    d->component = component;
    d->fd = -1;
    d->route_stale = 1;
    // Each handler holds a reference, dropped when it is disconnected (sfb_direct_rtp_close)
    // and no emission is running it.
    g_atomic_int_add(&d->refs, 2);
    d->on_pair = g_signal_connect_data(agent, "new-selected-pair-full", G_CALLBACK(on_pair_changed), d, release_closure, 0);
    d->on_state = g_signal_connect_data(agent, "component-state-changed", G_CALLBACK(on_state_changed), d, release_closure, 0);
    // A handler that could not be connected holds nothing (and the route is then read once).
    if (!d->on_pair) sfb_direct_rtp_unref(d);
    if (!d->on_state) sfb_direct_rtp_unref(d);
out:
    if (map.data) gst_buffer_unmap(key, &map);
    if (key) gst_buffer_unref(key);
    if (mki) gst_buffer_unref(mki);
    if (agent) g_object_unref(agent);
    return d;
}

// RTP payload length (header, CSRCs, extension and padding off), 0 if the packet is malformed.
static gsize payload_length(const guint8 *p, gsize n) {
    if (n < 12 || (p[0] >> 6) != 2) return 0;
    gsize h = 12 + 4 * (p[0] & 0x0f);
    if (p[0] & 0x10) {
        if (n < h + 4) return 0;
        h += 4 + 4 * (((gsize)p[h + 2] << 8) | p[h + 3]);
    }
    gsize pad = (p[0] & 0x20) ? p[n - 1] : 0;
    return n >= h + pad ? n - h - pad : 0;
}

// Reads the selected pair's socket and remote address (called with the lock held).
static void read_route(SfbDirectRTP *d) {
    g_clear_object(&d->socket);
    d->fd = -1;
    NiceComponentState state = lib.component_state(d->agent, d->stream, d->component);
    if (state != NICE_COMPONENT_STATE_CONNECTED && state != NICE_COMPONENT_STATE_READY) return;
    NiceCandidate *local = NULL, *remote = NULL;
    if (!lib.selected_pair(d->agent, d->stream, d->component, &local, &remote) || !local || !remote) return;
    if (local->type == NICE_CANDIDATE_TYPE_RELAYED || local->transport != NICE_CANDIDATE_TRANSPORT_UDP
        || remote->transport != NICE_CANDIDATE_TRANSPORT_UDP) return;
    const struct sockaddr *to = &remote->addr.s.addr;
    socklen_t to_len = to->sa_family == AF_INET ? sizeof(struct sockaddr_in)
                     : to->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : 0;
    if (to_len == 0) return;
    GSocket *socket = lib.selected_socket(d->agent, d->stream, d->component);
    if (!socket) return;
    int fd = -1;
    g_object_get(socket, "fd", &fd, NULL);
    if (fd < 0) { g_object_unref(socket); return; }
    memcpy(&d->to, to, to_len);
    d->to_len = to_len;
    d->socket = socket;
    d->fd = fd;
}

static void send_one(SfbDirectRTP *d, GstBuffer *buffer) {
    guint8 packet[MAX_RTP + SRTP_MAX_TRAILER_LEN];
    gsize n = gst_buffer_get_size(buffer);
    gsize payload;
    if (n > MAX_RTP || gst_buffer_extract(buffer, 0, packet, n) != n || (payload = payload_length(packet, n)) == 0) {
        __atomic_fetch_add(&d->dropped, 1, __ATOMIC_RELAXED);
        return;
    }
    int len = (int)n;
    if (!__atomic_load_n(&d->ssrc_known, __ATOMIC_RELAXED)) {
        __atomic_store_n(&d->ssrc, ((guint32)packet[8] << 24) | ((guint32)packet[9] << 16) | ((guint32)packet[10] << 8) | packet[11], __ATOMIC_RELAXED);
        __atomic_store_n(&d->ssrc_known, 1, __ATOMIC_RELEASE);
    }
    g_mutex_lock(&d->lock);
    srtp_err_status_t status = lib.protect(d->session, packet, &len);
    if (g_atomic_int_compare_and_exchange(&d->route_stale, 1, 0)) read_route(d);
    int fd = d->fd;
    g_mutex_unlock(&d->lock);
    // `to` is rewritten only by read_route, above, in this same pushing thread.
    // Never sent unprotected: a packet SRTP refused is dropped.
    gboolean sent = status == srtp_err_status_ok
        && (fd >= 0 ? sendto(fd, packet, (size_t)len, MSG_DONTWAIT, (struct sockaddr *)&d->to, d->to_len) == len
                    : lib.nice_send(d->agent, d->stream, d->component, (guint)len, (const gchar *)packet) >= 0);
    if (!sent) {
        __atomic_fetch_add(&d->dropped, 1, __ATOMIC_RELAXED);
        return;
    }
    __atomic_fetch_add(&d->packets, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&d->payload_bytes, payload, __ATOMIC_RELAXED);
}

// Runs `each` on the probe's buffer, or on every buffer of its list.
static void for_each_buffer(GstPadProbeInfo *info, SfbDirectRTP *d, void (*each)(SfbDirectRTP *, GstBuffer *)) {
    if (info->type & GST_PAD_PROBE_TYPE_BUFFER) {
        each(d, GST_PAD_PROBE_INFO_BUFFER(info));
    } else if (info->type & GST_PAD_PROBE_TYPE_BUFFER_LIST) {
        GstBufferList *list = GST_PAD_PROBE_INFO_BUFFER_LIST(info);
        for (guint i = 0, n = gst_buffer_list_length(list); i < n; i++) each(d, gst_buffer_list_get(list, i));
    }
}

static GstPadProbeReturn on_rtp(GstPad *pad, GstPadProbeInfo *info, gpointer data) {
    (void)pad;
    for_each_buffer(info, data, send_one);
    return GST_PAD_PROBE_DROP;
}

static void release(gpointer data) { sfb_direct_rtp_unref(data); }

gulong sfb_direct_rtp_attach(SfbDirectRTP *d, GstPad *pad) {
    g_atomic_int_inc(&d->refs);
    gulong id = gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_BUFFER_LIST, on_rtp, d, release);
    return id;
}

static guint32 be32(const guint8 *p) { return ((guint32)p[0] << 24) | ((guint32)p[1] << 16) | ((guint32)p[2] << 8) | p[3]; }

// Report blocks (RFC 3550 §6.4) about our SSRC in one compound RTCP packet.
static void read_reports(SfbDirectRTP *d, const guint8 *p, gsize n) {
    if (!__atomic_load_n(&d->ssrc_known, __ATOMIC_ACQUIRE)) return;
    guint32 ours = __atomic_load_n(&d->ssrc, __ATOMIC_RELAXED);
    gsize off = 0;
    while (off + 4 <= n && (p[off] >> 6) == 2) {
        gsize size = 4 * ((gsize)((p[off + 2] << 8) | p[off + 3]) + 1);
        guint pt = p[off + 1], count = p[off] & 0x1f;
        if (off + size > n) return;
        gsize blocks = pt == 200 ? off + 28 : pt == 201 ? off + 8 : 0;   // SR: after the sender info
        for (guint i = 0; blocks && i < count && blocks + 24 * (i + 1) <= off + size; i++) {
            const guint8 *b = p + blocks + 24 * i;
            if (be32(b) != ours) continue;
            gint32 lost = (gint32)(((guint32)b[5] << 16) | ((guint32)b[6] << 8) | b[7]);
            if (lost & 0x800000) lost -= 0x1000000;   // 24-bit signed
            __atomic_store_n(&d->cumulative_lost, (gint64)lost, __ATOMIC_RELAXED);
            __atomic_store_n(&d->jitter, be32(b + 12), __ATOMIC_RELAXED);
            __atomic_fetch_add(&d->reports, 1, __ATOMIC_RELAXED);
        }
        off += size;
    }
}

static void read_buffer(SfbDirectRTP *d, GstBuffer *buffer) {
    GstMapInfo map;
    if (!gst_buffer_map(buffer, &map, GST_MAP_READ)) return;
    // RTCP packet types 200–204; RTP never uses them as M|PT (RFC 5761 §4).
    if (map.size >= 8 && map.data[1] >= 200 && map.data[1] <= 204) read_reports(d, map.data, map.size);
    gst_buffer_unmap(buffer, &map);
}

static GstPadProbeReturn on_rtcp(GstPad *pad, GstPadProbeInfo *info, gpointer data) {
    (void)pad;
    for_each_buffer(info, data, read_buffer);
    return GST_PAD_PROBE_OK;
}

gulong sfb_direct_rtp_watch_reports(SfbDirectRTP *d, GstElement *webrtcbin, GstPad **pad) {
    *pad = NULL;
    int n = 0;
    GstElement *dec = sfb_only_element(webrtcbin, "srtpdec", &n);
    if (!dec) return 0;
    *pad = gst_element_get_static_pad(dec, "rtcp_src");
    gst_object_unref(dec);
    if (!*pad) return 0;
    g_atomic_int_inc(&d->refs);
    return gst_pad_add_probe(*pad, GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_BUFFER_LIST, on_rtcp, d, release);
}

void sfb_direct_rtp_reports(SfbDirectRTP *d, guint64 *reports, gint64 *cumulativeLost, guint32 *jitter) {
    *reports = __atomic_load_n(&d->reports, __ATOMIC_RELAXED);
    *cumulativeLost = __atomic_load_n(&d->cumulative_lost, __ATOMIC_RELAXED);
    *jitter = __atomic_load_n(&d->jitter, __ATOMIC_RELAXED);
}

void sfb_direct_rtp_counts(SfbDirectRTP *d, guint64 *packets, guint64 *payloadBytes, guint64 *dropped) {
    *packets = __atomic_load_n(&d->packets, __ATOMIC_RELAXED);
    *payloadBytes = __atomic_load_n(&d->payload_bytes, __ATOMIC_RELAXED);
    *dropped = __atomic_load_n(&d->dropped, __ATOMIC_RELAXED);
}

void sfb_direct_rtp_close(SfbDirectRTP *d) {
    g_mutex_lock(&d->lock);
    gulong pair = d->on_pair, state = d->on_state;
    d->on_pair = d->on_state = 0;
    g_mutex_unlock(&d->lock);
    if (pair) g_signal_handler_disconnect(d->agent, pair);
    if (state) g_signal_handler_disconnect(d->agent, state);
    sfb_direct_rtp_unref(d);
}

void sfb_direct_rtp_unref(SfbDirectRTP *d) {
    if (!g_atomic_int_dec_and_test(&d->refs)) return;
    lib.dealloc(d->session);
    g_clear_object(&d->socket);
    g_object_unref(d->agent);
    g_mutex_clear(&d->lock);
    g_free(d);
}
