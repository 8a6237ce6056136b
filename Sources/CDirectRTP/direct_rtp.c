// See CDirectRTP.h. libsrtp2 and libnice are the very libraries GStreamer's srtp and nice
// plugins loaded (found by soname, RTLD_NOLOAD): sfubot links neither, so the libsrtp the
// process uses (the OpenSSL build `sfubot load` preloads, SRTPLibrary) is the one used here
// too, already initialised by srtpenc.
#include "direct_rtp.h"
#include "elements.h"
#include <dlfcn.h>
#include <string.h>
#include <unistd.h>

// Enums of GStreamer's srtp plugin (gstsrtp-enumtypes), read from srtpenc as plain ints.
enum { CIPHER_AES_128_ICM = 1, CIPHER_AES_256_ICM = 2, CIPHER_AES_128_GCM = 3, CIPHER_AES_256_GCM = 4 };
enum { AUTH_NULL = 0, AUTH_HMAC_SHA1_32 = 1, AUTH_HMAC_SHA1_80 = 2 };


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
    gboolean ready;
} lib;
static pthread_mutex_t lib_lock = PTHREAD_MUTEX_INITIALIZER;

// Finds the functions, once they are there: a call before any srtpenc or nicesink exists
// fails without keeping the failure (it would refuse every later sender of the process).
// Called with lib_lock held.
static void resolve(void) {
    lib.missing = NULL;
    void *srtp = dlopen("libsrtp2.so.1", RTLD_NOW | RTLD_NOLOAD);
    void *nice = dlopen("libnice.so.10", RTLD_NOW | RTLD_NOLOAD);
    if (srtp) dlclose(srtp);   // RTLD_NOLOAD took a reference; the plugins keep theirs
    if (nice) dlclose(nice);
    if (!srtp) { lib.missing = "libsrtp2 is not loaded (no srtpenc yet?)"; return; }
    if (!nice) { lib.missing = "libnice is not loaded (no nicesink yet?)"; return; }
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
    else lib.ready = TRUE;
}

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
    pthread_mutex_lock(&lib_lock);
    if (!lib.ready) resolve();
    const char *missing = lib.ready ? NULL : lib.missing;
    pthread_mutex_unlock(&lib_lock);
    if (missing) { *why = missing; return NULL; }
    int n = 0;
    GstElement *enc = sfb_only_element(webrtcbin, "srtpenc", &n);
    if (!enc) { *why = n == 0 ? "webrtcbin has no srtpenc yet" : "more than one transport (not bundled)"; return NULL; }
    GstElement *sink = sfb_only_element(webrtcbin, "nicesink", &n);
    if (!sink) { gst_object_unref(enc); *why = n == 0 ? "webrtcbin has no nicesink yet" : "more than one transport (not bundled)"; return NULL; }
    GstElement *session = sfb_only_element(webrtcbin, "rtpsession", &n);
    if (!session) { gst_object_unref(enc); gst_object_unref(sink); *why = "webrtcbin has not exactly one RTP session (not bundled)"; return NULL; }

    GstBuffer *key = NULL, *mki = NULL;
    gint cipher = 0, auth = 0;
    guint window = 0;
    gboolean random_key = TRUE;
    // dtlssrtpenc starts srtpenc on a random key (Janus fails all its packets), then sets DTLS's
    // key and random-key FALSE in one g_object_set: read first, FALSE means the key is DTLS's.
    g_object_get(enc, "random-key", &random_key, NULL);
    g_object_get(enc, "key", &key, "mki", &mki, "rtp-cipher", &cipher, "rtp-auth", &auth, "replay-window-size", &window, NULL);
    NiceAgent *agent = NULL;
    guint stream = 0, component = 0;
    g_object_get(sink, "agent", &agent, "stream", &stream, "component", &component, NULL);
    gst_object_unref(sink);

    SfbDirectRTP *d = NULL;
    srtp_policy_t policy;
    memset(&policy, 0, sizeof policy);
    gsize key_len = 0;
    GstMapInfo map = GST_MAP_INFO_INIT;
    if (!agent || stream == 0 || component == 0) { *why = "nicesink has no ICE agent or stream"; goto out; }
    if (!key || random_key) { *why = "srtpenc has no DTLS key yet (DTLS not done)"; goto out; }
    if (mki) { *why = "srtpenc uses an MKI"; goto out; }
    if (!set_policy(&policy.rtp, cipher, auth, &key_len)) { *why = "srtpenc's cipher is not one this path knows"; goto out; }
    // libsrtp checks the RTCP policy too; srtpenc's RTCP is the same profile as its RTP.
    policy.rtcp = policy.rtp;
    if (gst_buffer_get_size(key) < key_len || !gst_buffer_map(key, &map, GST_MAP_READ)) { *why = "srtpenc's key is too short"; goto out; }
    policy.ssrc.type = ssrc_any_outbound;
    policy.key = map.data;
    policy.window_size = window;
    policy.allow_repeat_tx = 0;

    d = g_new0(SfbDirectRTP, 1);
    d->refs = 1;
    pthread_mutex_init(&d->lock, NULL);
    // srtp_create copies the key material: the mapped key is released below.
    if (lib.create(&d->session, &policy) != srtp_err_status_ok) {
        pthread_mutex_destroy(&d->lock);
        g_free(d);
        d = NULL;
        *why = "libsrtp refused srtpenc's key";
        goto out;
    }
    // From here on srtpenc and this sender never protect one SSRC both.
    d->guard = sfb_srtp_guard_new(enc, session);
    d->agent = g_object_ref(agent);
    d->stream = stream;
    d->component = component;
    d->fd = -1;
    d->route_stale = 1;
    d->answer_nacks = 1;
    // Each handler holds a reference, dropped when it is disconnected (sfb_direct_rtp_close)
    // and no emission is running it.
    g_atomic_int_add(&d->refs, 2);
    d->on_pair = g_signal_connect_data(agent, "new-selected-pair-full", G_CALLBACK(on_pair_changed), d, release_closure, 0);
    d->on_state = g_signal_connect_data(agent, "component-state-changed", G_CALLBACK(on_state_changed), d, release_closure, 0);
    // A handler that could not be connected holds nothing (and the route is then read once).
    if (!d->on_pair) sfb_direct_rtp_unref(d);
    if (!d->on_state) sfb_direct_rtp_unref(d);
out:
    gst_object_unref(enc);
    gst_object_unref(session);
    if (map.data) gst_buffer_unmap(key, &map);
    if (key) gst_buffer_unref(key);
    if (mki) gst_buffer_unref(mki);
    if (agent) g_object_unref(agent);
    return d;
}

// Reads the selected pair's socket (a copy of its descriptor) and remote address (called
// with the lock held).
static void read_route(SfbDirectRTP *d) {
    if (d->fd >= 0) close(d->fd);
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
    // Our own descriptor for the socket, while libnice's reference keeps its fd open.
    fd = fd < 0 ? -1 : dup(fd);
    g_object_unref(socket);
    if (fd < 0) return;
    memcpy(&d->to, to, to_len);
    d->to_len = to_len;
    d->fd = fd;
}

// Is `ssrc` ours to protect? Claims it on its first packet (called with the lock held): one
// srtpenc was given is not ours, nor one past the SSRCs a sender keeps.
gboolean sfb_direct_owns_locked(SfbDirectRTP *d, guint32 ssrc) {
    gint n = __atomic_load_n(&d->n_ssrcs, __ATOMIC_RELAXED);
    for (gint i = 0; i < n; i++) if (d->ssrcs[i] == ssrc) return TRUE;
    if (n == SFB_DIRECT_SSRCS || !sfb_srtp_guard_claim(d->guard, ssrc)) return FALSE;
    d->ssrcs[n] = ssrc;
    __atomic_store_n(&d->n_ssrcs, n + 1, __ATOMIC_RELEASE);
    return TRUE;
}

gboolean sfb_direct_transmit_locked(SfbDirectRTP *d, const guint8 *packet, gsize len) {
    if (g_atomic_int_compare_and_exchange(&d->route_stale, 1, 0)) read_route(d);
    // The descriptor is used, and replaced, only under the lock.
    if (d->fd >= 0) return sendto(d->fd, packet, len, MSG_DONTWAIT, (struct sockaddr *)&d->to, d->to_len) == (ssize_t)len;
    // No plain UDP route (a relayed pair): libnice frames the packet for the TURN server.
    gboolean sent = lib.nice_send(d->agent, d->stream, d->component, (guint)len, (const gchar *)packet) >= 0;
    if (sent) __atomic_fetch_add(&d->through_agent, 1, __ATOMIC_RELAXED);
    return sent;
}

gboolean sfb_direct_protect_locked(SfbDirectRTP *d, guint8 *packet, int *len) {
    return lib.protect(d->session, packet, len) == srtp_err_status_ok;
}

gboolean sfb_direct_send_one(SfbDirectRTP *d, GstBuffer *buffer, gboolean keep) {
    guint8 packet[SFB_MAX_RTP + SRTP_MAX_TRAILER_LEN];
    gsize n = gst_buffer_get_size(buffer);
    gsize payload;
    if (n > SFB_MAX_RTP || gst_buffer_extract(buffer, 0, packet, n) != n || (payload = sfb_rtp_payload_length(packet, n)) == 0) {
        __atomic_fetch_add(&d->dropped, 1, __ATOMIC_RELAXED);
        return FALSE;
    }
    int len = (int)n;
    guint32 ssrc = ((guint32)packet[8] << 24) | ((guint32)packet[9] << 16) | ((guint32)packet[10] << 8) | packet[11];
    pthread_mutex_lock(&d->lock);
    // An SSRC is claimed before its first packet is protected; one srtpenc was given is not ours.
    if (!sfb_direct_owns_locked(d, ssrc)) {
        pthread_mutex_unlock(&d->lock);
        __atomic_fetch_add(&d->refused, 1, __ATOMIC_RELAXED);
        __atomic_fetch_add(&d->dropped, 1, __ATOMIC_RELAXED);
        return FALSE;
    }
    // Never sent (nor kept) unprotected: a packet SRTP refused is dropped.
    gboolean ok = lib.protect(d->session, packet, &len) == srtp_err_status_ok;
    gboolean sent = ok && sfb_direct_transmit_locked(d, packet, (gsize)len);
    // Kept even if the send failed: a NACK for it may still come.
    if (ok && keep && (d->history || (d->history = sfb_sent_history_new(SFB_HISTORY_BYTES, SFB_HISTORY_SLOTS))))
        sfb_sent_history_keep(d->history, (guint16)((packet[2] << 8) | packet[3]), packet, (gsize)len);
    pthread_mutex_unlock(&d->lock);
    if (!sent) {
        __atomic_fetch_add(&d->dropped, 1, __ATOMIC_RELAXED);
        return FALSE;
    }
    __atomic_fetch_add(&d->packets, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&d->payload_bytes, payload, __ATOMIC_RELAXED);
    return TRUE;
}

static void send_one(SfbDirectRTP *d, GstBuffer *buffer) { (void)sfb_direct_send_one(d, buffer, FALSE); }

static GstPadProbeReturn on_rtp(GstPad *pad, GstPadProbeInfo *info, gpointer data) {
    (void)pad;
    sfb_direct_for_each_buffer(info, data, send_one);
    return GST_PAD_PROBE_DROP;
}

void sfb_direct_release(gpointer data) { sfb_direct_rtp_unref(data); }

gulong sfb_direct_rtp_attach(SfbDirectRTP *d, GstPad *pad) {
    g_atomic_int_inc(&d->refs);
    gulong id = gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_BUFFER_LIST, on_rtp, d, sfb_direct_release);
    return id;
}

void sfb_direct_rtp_close(SfbDirectRTP *d) {
    pthread_mutex_lock(&d->lock);
    gulong pair = d->on_pair, state = d->on_state;
    d->on_pair = d->on_state = 0;
    pthread_mutex_unlock(&d->lock);
    if (pair) g_signal_handler_disconnect(d->agent, pair);
    if (state) g_signal_handler_disconnect(d->agent, state);
    sfb_direct_rtp_unref(d);
}

void sfb_direct_rtp_unref(SfbDirectRTP *d) {
    if (!g_atomic_int_dec_and_test(&d->refs)) return;
    lib.dealloc(d->session);
    if (d->fd >= 0) close(d->fd);
    sfb_srtp_guard_unref(d->guard);
    sfb_sent_history_free(d->history);
    g_object_unref(d->agent);
    pthread_mutex_destroy(&d->lock);
    g_free(d);
}
