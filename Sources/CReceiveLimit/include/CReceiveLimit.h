// The receive limit's C (sfubot-bench receive-limit, issue 42): what a minimal receiver of our
// media does per packet besides the frame's AES-GCM: recvmmsg, libsrtp unprotect, find the RTP
// payload. Kept apart from CDirectRTP, which serves the load bots inside webrtcbin; this one
// owns its sockets and its own libsrtp sessions. The send limit (sfubot-bench send-limit) uses
// its protect and sendmmsg. It could go if the recorder's own receive path (issue 42 item 1)
// became the minimal receiver and the load publishers' send path the minimal sender.
#ifndef CRECEIVELIMIT_H
#define CRECEIVELIMIT_H
#include <stdint.h>

/// Packets one sfb_limit_receive reads at most, and the room for one (a packet past it is cut: fails).
#define SFB_LIMIT_BATCH 64
#define SFB_LIMIT_SLOT 1536
/// Master key + salt of AES_CM_128_HMAC_SHA1_80, the profile webrtcbin and Janus negotiate first.
#define SFB_LIMIT_KEY_LENGTH 30
/// Bytes protecting adds at most (the auth tag).
#define SFB_LIMIT_SRTP_TRAILER 16

/// The path of the libsrtp2 loaded (the one SRTPLibrary.preload chose, else the system's), or
/// NULL with `*why` if it does not load.
const char *sfb_limit_srtp_library(const char **why);

typedef struct SfbLimitSRTP SfbLimitSRTP;
/// One libsrtp session for every SSRC (ssrc_any), outbound or inbound, on `key`
/// (SFB_LIMIT_KEY_LENGTH bytes). NULL with `*why` (a static string) on failure.
SfbLimitSRTP *sfb_limit_srtp_new(const uint8_t *key, int inbound, const char **why);
void sfb_limit_srtp_free(SfbLimitSRTP *session);

/// Protects the RTP packet of `length` bytes in place (room for SFB_LIMIT_SRTP_TRAILER more);
/// the protected length, or -1.
int sfb_limit_protect(SfbLimitSRTP *session, uint8_t *packet, int length);

/// A UDP socket bound to 127.0.0.1 on a free port (in `*port`), its receive buffer `bytes`
/// (forced past rmem_max when allowed), reads timing out after `timeoutMilliseconds`; -1 on failure.
int sfb_limit_receiver_socket(int bytes, int timeoutMilliseconds, uint16_t *port);
/// A UDP socket connected to 127.0.0.1:`port`; -1 on failure.
int sfb_limit_sender_socket(uint16_t port);

/// Sends `count` packets (`packets[i]`, `lengths[i]` bytes) with sendmmsg; how many went, -1 on error.
int sfb_limit_send(int fd, uint8_t *const *packets, const int *lengths, int count);

/// The calling thread's CPU seconds in the kernel so far (getrusage RUSAGE_THREAD).
double sfb_limit_thread_kernel_seconds(void);

/// What became of one received packet.
typedef struct {
    int32_t offset;       // the RTP payload's first byte in its slot
    int32_t length;       // its length; -1: did not unprotect; -2: not RTP or malformed
    uint32_t ssrc;
    uint8_t marker;
    uint8_t payloadType;
} SfbLimitPacket;

/// Reads up to SFB_LIMIT_BATCH packets (waits for the first) into `slots` (SFB_LIMIT_BATCH x
/// SFB_LIMIT_SLOT bytes), unprotects each in place and finds its payload. Returns how many
/// were read: 0 when the wait timed out (SO_RCVTIMEO) or the read failed.
int sfb_limit_receive(int fd, SfbLimitSRTP *session, uint8_t *slots, SfbLimitPacket *packets);

#endif
