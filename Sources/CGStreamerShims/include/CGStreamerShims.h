// What Swift cannot call in GStreamer/GLib: variadic functions (g_signal_emit_by_name,
// g_object_get) and type macros (G_OBJECT_GET_CLASS, GST_TYPE_*). One function per need,
// prefixed sfb_. Each could go if Swift learned to call C varargs.
#ifndef CGSTREAMERSHIMS_H
#define CGSTREAMERSHIMS_H
#define GST_USE_UNSTABLE_API 1
#include <gst/gst.h>
#include <gst/sdp/sdp.h>
#include <gst/webrtc/webrtc.h>
#include "sfb_reorder.h"

/// Sets property `name` of `object` from its string form, parsed as the property's own
/// type (gst_value_deserialize). Returns 0 on success, 1 if there is no such property,
/// 2 if the value does not parse as that type, 3 if the property is not writable.
int sfb_object_set_property_from_string(GObject *object, const char *name, const char *value);

/// The property's value as a newly allocated string (g_free it), or NULL if there is none.
char *sfb_object_get_property_string(GObject *object, const char *name);

/// Whether `object` has a property called `name`.
gboolean sfb_object_has_property(GObject *object, const char *name);

/// webrtcbin action signals.
void sfb_webrtc_create_offer(GstElement *webrtc, GstPromise *promise);
void sfb_webrtc_create_answer(GstElement *webrtc, GstPromise *promise);
void sfb_webrtc_set_local_description(GstElement *webrtc, GstWebRTCSessionDescription *desc, GstPromise *promise);
void sfb_webrtc_set_remote_description(GstElement *webrtc, GstWebRTCSessionDescription *desc, GstPromise *promise);
void sfb_webrtc_add_ice_candidate(GstElement *webrtc, guint mline, const char *candidate);
// `add-turn-server` with a turn(s)://user:password@host:port URI; FALSE if webrtcbin refused it.
gboolean sfb_webrtc_add_turn_server(GstElement *webrtc, const char *uri);
void sfb_webrtc_get_stats(GstElement *webrtc, GstPad *pad, GstPromise *promise);
/// Packets every rtpjitterbuffer (and sfbreorder) inside `bin` gave up waiting for (its `num-lost`: not arrived,
/// not repaired by a retransmission), summed; 0 for an element that is not a bin.
guint64 sfb_jitterbuffers_lost(GstElement *bin);
/// Packets every one of them asked for again (NACK) and got (its `rtx-success-count`), summed.
guint64 sfb_jitterbuffers_repaired(GstElement *bin);
/// Every sfbreorder inside `bin` lets out what its first packets wait for (lip sync) at once;
/// returns how many took the event. Blocks until each stream's packet in flight is through.
guint sfb_reorders_release_held(GstElement *bin);
/// The latest RTCP sender report of each remote source in webrtcbin's RTP sessions: its NTP
/// time (64-bit fixed point) and packet count. Fills up to `max`; returns how many there are
/// (possibly more than `max`), or -1 if `webrtc` has no rtpbin.
typedef struct { guint32 ssrc; guint64 ntp_time; guint32 packets; } SfbSenderReport;
int sfb_webrtc_sender_reports(GstElement *webrtc, SfbSenderReport *out, int max);
/// Adds a transceiver; returns it with a reference the caller owns, or NULL.
GstWebRTCRTPTransceiver *sfb_webrtc_add_transceiver(GstElement *webrtc, GstWebRTCRTPTransceiverDirection direction, GstCaps *caps);
/// The `mid` of the transceiver behind a webrtcbin pad (newly allocated, g_free it), or NULL.
char *sfb_webrtc_pad_mid(GstPad *pad);

/// `create-data-channel` with its options as the GstStructure webrtcbin reads: `ordered`,
/// `max-retransmits` and `max-packet-lifetime` (-1: not set), `protocol` (NULL: none), and with
/// `id` ≥ 0 a channel negotiated out of band (`negotiated`, `id`). Returns the channel with a
/// reference the caller owns, or NULL (webrtcbin below READY, an id in use, no SCTP elements).
GstWebRTCDataChannel *sfb_webrtc_create_data_channel(GstElement *webrtc, const char *label, gboolean ordered,
                                                     gint max_retransmits, gint max_packet_lifetime,
                                                     const char *protocol, gint id);

/// A data channel's `ready-state` (GstWebRTCDataChannelState; 0 before it has a transport), and its `label` (newly allocated).
GstWebRTCDataChannelState sfb_data_channel_ready_state(GstWebRTCDataChannel *channel);
char *sfb_data_channel_label(GstWebRTCDataChannel *channel);

/// Gives webrtcbin's rtpbin an `identity` instead of an rtpjitterbuffer for each new receive
/// stream (signal `request-jitterbuffer`). Returns 0, or 1 (no rtpbin) / 2 (GStreamer too old).
int sfb_webrtc_plain_jitterbuffers(GstElement *webrtc);

/// Turns off libnice's UPnP (SSDP multicast) and ICE-TCP on webrtcbin's agent.
/// Returns 0 on success, or which step failed (1: no ice-agent, 2: no NiceAgent).
int sfb_webrtc_lock_down_ice(GstElement *webrtc);

/// The session description held in a promise reply field ("offer"/"answer"), borrowed, or NULL.
const GstWebRTCSessionDescription *sfb_structure_get_sdp(const GstStructure *s, const char *field);

/// Names of a GError-carrying field ("error") in a promise reply, newly allocated, or NULL.
char *sfb_structure_get_error_message(const GstStructure *s);

/// Replaces the buffer carried by a pad probe; the old one is unreffed.
void sfb_probe_info_replace_buffer(GstPadProbeInfo *info, GstBuffer *buffer);
GstBuffer *sfb_probe_info_buffer(GstPadProbeInfo *info);
/// How long ago `buffer` on `pad` was due by its own time stamp: the running time of
/// `pad`'s element's clock now minus the buffer's (its PTS in the pad's segment), in ns; -1
/// when either is unknown (no clock yet, no PTS, no segment).
gint64 sfb_pad_buffer_age(GstPad *pad, GstBuffer *buffer);

/// Connects `handler` (a C function of the signal's own signature) with user data freed by `notify`.
gulong sfb_signal_connect(gpointer instance, const char *signal, GCallback handler, gpointer data, GClosureNotify notify);

/// What a media file holds (GstDiscoverer). Returns 0, or 1 with `error` (g_free it) set.
/// `video_caps`/`audio_caps`: caps of the first stream of each kind, newly allocated or NULL.
int sfb_discover(const char *uri, guint timeout_seconds, char **audio_caps, char **video_caps,
                 guint64 *duration_ns, char **error);

/// GST_IS_PIPELINE.
gboolean sfb_is_pipeline(GstElement *element);

/// GST_OBJECT_REFCOUNT_VALUE for any GObject, read atomically: lets tests check that each
/// wrapper owns exactly one reference.
guint sfb_object_refcount(gpointer object);

#endif
