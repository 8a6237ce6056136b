// See CReceiveLimit.h. libsrtp2 is opened by soname (sfubot links no libsrtp): in sfubot-bench
// that resolves to the library SRTPLibrary.preload loaded, the one the recorder's srtpdec uses.
#define _GNU_SOURCE
#include "CReceiveLimit.h"
#include <srtp2/srtp.h>
#include <dlfcn.h>
#include <time.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <netinet/in.h>
#include <arpa/inet.h>

static struct {
    __typeof__(srtp_init) *init;
    __typeof__(srtp_create) *create;
    __typeof__(srtp_protect) *protect;
    __typeof__(srtp_unprotect) *unprotect;
    __typeof__(srtp_dealloc) *dealloc;
    __typeof__(srtp_crypto_policy_set_rtp_default) *policy;
    const char *missing;
    int init_status;
    char path[512];
} lib;
static pthread_once_t loaded = PTHREAD_ONCE_INIT;

static void load(void) {
    void *h = dlopen("libsrtp2.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!h) { lib.missing = "libsrtp2.so.1 does not load (apt-get install libsrtp2-1)"; return; }
    lib.init = dlsym(h, "srtp_init");
    lib.create = dlsym(h, "srtp_create");
    lib.protect = dlsym(h, "srtp_protect");
    lib.unprotect = dlsym(h, "srtp_unprotect");
    lib.dealloc = dlsym(h, "srtp_dealloc");
    lib.policy = dlsym(h, "srtp_crypto_policy_set_rtp_default");
    if (!lib.init || !lib.create || !lib.protect || !lib.unprotect || !lib.dealloc || !lib.policy) {
        lib.missing = "a libsrtp2 function is missing";
        return;
    }
    // A second srtp_init in a process fails (bad_param: its debug module is loaded already),
    // and GStreamer's srtp plugin calls it when it loads: a failure here is that, or a library
    // that cannot work, and then srtp_create refuses every key (sfb_limit_srtp_new says both).
    lib.init_status = lib.init();
    Dl_info info;
    if (dladdr((void *)lib.create, &info) && info.dli_fname) snprintf(lib.path, sizeof lib.path, "%s", info.dli_fname);
    else snprintf(lib.path, sizeof lib.path, "libsrtp2.so.1");
}

const char *sfb_limit_srtp_library(const char **why) {
    pthread_once(&loaded, load);
    if (lib.missing) { *why = lib.missing; return NULL; }
    return lib.path;
}

struct SfbLimitSRTP { srtp_t session; };

SfbLimitSRTP *sfb_limit_srtp_new(const uint8_t *key, int inbound, const char **why) {
    if (!sfb_limit_srtp_library(why)) return NULL;
    srtp_policy_t policy;
    memset(&policy, 0, sizeof policy);
    lib.policy(&policy.rtp);
    lib.policy(&policy.rtcp);  // libsrtp checks the RTCP policy too; no RTCP is sent here
    policy.ssrc.type = inbound ? ssrc_any_inbound : ssrc_any_outbound;
    uint8_t material[SFB_LIMIT_KEY_LENGTH];
    memcpy(material, key, sizeof material);  // srtp_create copies it
    policy.key = material;
    SfbLimitSRTP *s = calloc(1, sizeof *s);
    if (!s) { *why = "out of memory"; return NULL; }
    if (lib.create(&s->session, &policy) != srtp_err_status_ok) {
        free(s);
        *why = lib.init_status ? "libsrtp refused the key (and srtp_init had failed: the library is not usable)" : "libsrtp refused the key";
        return NULL;
    }
    memset(material, 0, sizeof material);
    return s;
}

void sfb_limit_srtp_free(SfbLimitSRTP *s) {
    if (!s) return;
    lib.dealloc(s->session);
    free(s);
}

int sfb_limit_protect(SfbLimitSRTP *s, uint8_t *packet, int length) {
    int len = length;
    return lib.protect(s->session, packet, &len) == srtp_err_status_ok ? len : -1;
}

int sfb_limit_receiver_socket(int bytes, int timeoutMilliseconds, uint16_t *port) {
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    // SO_RCVBUFFORCE passes net.core.rmem_max with CAP_NET_ADMIN; SO_RCVBUF otherwise (capped).
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof bytes) != 0) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
    struct timeval tv = { .tv_sec = timeoutMilliseconds / 1000, .tv_usec = (timeoutMilliseconds % 1000) * 1000 };
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = 0, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t alen = sizeof a;
    if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0
        || getsockname(fd, (struct sockaddr *)&a, &alen) != 0) { close(fd); return -1; }
    *port = ntohs(a.sin_port);
    return fd;
}

int sfb_limit_sender_socket(uint16_t port) {
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) { close(fd); return -1; }
    return fd;
}

int sfb_limit_send(int fd, uint8_t *const *packets, const int *lengths, int count) {
    struct mmsghdr msgs[SFB_LIMIT_BATCH];
    struct iovec iov[SFB_LIMIT_BATCH];
    int sent = 0;
    while (sent < count) {
        int n = count - sent < SFB_LIMIT_BATCH ? count - sent : SFB_LIMIT_BATCH;
        memset(msgs, 0, sizeof(struct mmsghdr) * (size_t)n);
        for (int i = 0; i < n; i++) {
            iov[i] = (struct iovec){ .iov_base = packets[sent + i], .iov_len = (size_t)lengths[sent + i] };
            msgs[i].msg_hdr.msg_iov = &iov[i];
            msgs[i].msg_hdr.msg_iovlen = 1;
        }
        int r = sendmmsg(fd, msgs, (unsigned)n, 0);
        if (r < 0) return sent > 0 ? sent : -1;
        sent += r;
    }
    return sent;
}

double sfb_limit_thread_kernel_seconds(void) {
    struct rusage u;
    if (getrusage(RUSAGE_THREAD, &u) != 0) return 0;
    return (double)u.ru_stime.tv_sec + (double)u.ru_stime.tv_usec / 1e6;
}

// RFC 3550 §5.1: the payload after the header, CSRCs and extension, padding off; FALSE if malformed.
static int find_payload(const uint8_t *p, int len, SfbLimitPacket *out) {
    if (len < 12 || (p[0] >> 6) != 2) return 0;
    int at = 12 + 4 * (p[0] & 0x0F);
    if ((p[0] & 0x10) && len >= at + 4) at += 4 + 4 * ((p[at + 2] << 8) | p[at + 3]);
    else if (p[0] & 0x10) return 0;
    int end = len;
    if (p[0] & 0x20) end -= p[len - 1];
    if (at > end) return 0;
    out->offset = at;
    out->length = end - at;
    out->marker = p[1] >> 7;
    out->payloadType = p[1] & 0x7F;
    out->ssrc = ((uint32_t)p[8] << 24) | ((uint32_t)p[9] << 16) | ((uint32_t)p[10] << 8) | p[11];
    return 1;
}

int sfb_limit_receive(int fd, SfbLimitSRTP *s, uint8_t *slots, SfbLimitPacket *packets) {
    struct mmsghdr msgs[SFB_LIMIT_BATCH];
    struct iovec iov[SFB_LIMIT_BATCH];
    memset(msgs, 0, sizeof msgs);
    for (int i = 0; i < SFB_LIMIT_BATCH; i++) {
        iov[i] = (struct iovec){ .iov_base = slots + (size_t)i * SFB_LIMIT_SLOT, .iov_len = SFB_LIMIT_SLOT };
        msgs[i].msg_hdr.msg_iov = &iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
    }
    int n = recvmmsg(fd, msgs, SFB_LIMIT_BATCH, MSG_WAITFORONE, NULL);
    if (n < 0) return 0;  // SO_RCVTIMEO ran out (EAGAIN), or interrupted: the caller decides
    for (int i = 0; i < n; i++) {
        uint8_t *p = slots + (size_t)i * SFB_LIMIT_SLOT;
        int len = (int)msgs[i].msg_len;
        SfbLimitPacket *out = &packets[i];
        memset(out, 0, sizeof *out);
        if (msgs[i].msg_hdr.msg_flags & MSG_TRUNC) { out->length = -2; continue; }
        if (lib.unprotect(s->session, p, &len) != srtp_err_status_ok) { out->length = -1; continue; }
        if (!find_payload(p, len, out)) out->length = -2;
    }
    return n;
}
