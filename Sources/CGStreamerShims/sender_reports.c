// RTCP sender reports as webrtcbin's RTP sessions last heard them, read from rtpbin's internal
// sessions (signal `get-internal-session`, property `stats`: both unreachable from Swift).
// webrtcbin's get-stats cannot give them once a stream is silent: it reads them through the src
// pad's caps, which are gone a few seconds after the last RTP packet, while the session keeps
// the source, and its reports, as long as RTCP arrives.
#include "CGStreamerShims.h"

static int add_reports(GObject *session, SfbSenderReport *out, int max, int n) {
  GstStructure *stats = NULL;
  g_object_get(session, "stats", &stats, NULL);
  const GValue *sources = stats ? gst_structure_get_value(stats, "source-stats") : NULL;
  G_GNUC_BEGIN_IGNORE_DEPRECATIONS  // rtpsession's "source-stats" is a GValueArray
  GValueArray *array = sources && G_VALUE_HOLDS(sources, g_value_array_get_type()) ? g_value_get_boxed(sources) : NULL;
  for (guint i = 0; array && i < array->n_values; i++) {
    const GstStructure *s = gst_value_get_structure(g_value_array_get_nth(array, i));
    gboolean internal = TRUE, have_sr = FALSE;
    guint ssrc = 0, packets = 0;
    guint64 ntp = 0;
    if (!s || !gst_structure_get_boolean(s, "internal", &internal) || internal
        || !gst_structure_get_boolean(s, "have-sr", &have_sr) || !have_sr
        || !gst_structure_get_uint(s, "ssrc", &ssrc) || !gst_structure_get_uint64(s, "sr-ntptime", &ntp)
        || !gst_structure_get_uint(s, "sr-packet-count", &packets)) continue;
    if (n < max) out[n] = (SfbSenderReport){ .ssrc = ssrc, .ntp_time = ntp, .packets = packets };
    n++;
  }
  G_GNUC_END_IGNORE_DEPRECATIONS
  if (stats) gst_structure_free(stats);
  return n;
}

int sfb_webrtc_sender_reports(GstElement *webrtc, SfbSenderReport *out, int max) {
  GstElement *rtpbin = GST_IS_BIN(webrtc) ? gst_bin_get_by_name(GST_BIN(webrtc), "rtpbin") : NULL;
  if (rtpbin == NULL) return -1;
  int n = 0;
  // webrtcbin numbers its sessions from 0, one per transport (one in all when bundled).
  for (guint id = 0; id < 16; id++) {
    GObject *session = NULL;
    g_signal_emit_by_name(rtpbin, "get-internal-session", id, &session);
    if (session == NULL) continue;
    n = add_reports(session, out, max, n);
    g_object_unref(session);
  }
  gst_object_unref(rtpbin);
  return n;
}
