#include "CGStreamerShims.h"

int sfb_object_set_property_from_string(GObject *object, const char *name, const char *value) {
  GParamSpec *spec = g_object_class_find_property(G_OBJECT_GET_CLASS(object), name);
  if (spec == NULL) return 1;
  if (!(spec->flags & G_PARAM_WRITABLE)) return 3;
  GValue v = G_VALUE_INIT;
  g_value_init(&v, G_PARAM_SPEC_VALUE_TYPE(spec));
  if (!gst_value_deserialize(&v, value)) {
    g_value_unset(&v);
    return 2;
  }
  g_object_set_property(object, name, &v);
  g_value_unset(&v);
  return 0;
}

char *sfb_object_get_property_string(GObject *object, const char *name) {
  GParamSpec *spec = g_object_class_find_property(G_OBJECT_GET_CLASS(object), name);
  if (spec == NULL) return NULL;
  GValue v = G_VALUE_INIT;
  g_value_init(&v, G_PARAM_SPEC_VALUE_TYPE(spec));
  g_object_get_property(object, name, &v);
  char *out = G_VALUE_HOLDS_STRING(&v) ? g_value_dup_string(&v) : gst_value_serialize(&v);
  g_value_unset(&v);
  return out;
}

gboolean sfb_object_has_property(GObject *object, const char *name) {
  return g_object_class_find_property(G_OBJECT_GET_CLASS(object), name) != NULL;
}

void sfb_webrtc_create_offer(GstElement *webrtc, GstPromise *promise) {
  g_signal_emit_by_name(webrtc, "create-offer", NULL, promise);
}

void sfb_webrtc_create_answer(GstElement *webrtc, GstPromise *promise) {
  g_signal_emit_by_name(webrtc, "create-answer", NULL, promise);
}

void sfb_webrtc_set_local_description(GstElement *webrtc, GstWebRTCSessionDescription *desc, GstPromise *promise) {
  g_signal_emit_by_name(webrtc, "set-local-description", desc, promise);
}

void sfb_webrtc_set_remote_description(GstElement *webrtc, GstWebRTCSessionDescription *desc, GstPromise *promise) {
  g_signal_emit_by_name(webrtc, "set-remote-description", desc, promise);
}

void sfb_webrtc_add_ice_candidate(GstElement *webrtc, guint mline, const char *candidate) {
  g_signal_emit_by_name(webrtc, "add-ice-candidate", mline, candidate);
}

gboolean sfb_webrtc_add_turn_server(GstElement *webrtc, const char *uri) {
  gboolean added = FALSE;
  g_signal_emit_by_name(webrtc, "add-turn-server", uri, &added);
  return added;
}

void sfb_webrtc_get_stats(GstElement *webrtc, GstPad *pad, GstPromise *promise) {
  g_signal_emit_by_name(webrtc, "get-stats", pad, promise);
}

GstWebRTCRTPTransceiver *sfb_webrtc_add_transceiver(GstElement *webrtc, GstWebRTCRTPTransceiverDirection direction, GstCaps *caps) {
  GstWebRTCRTPTransceiver *t = NULL;
  g_signal_emit_by_name(webrtc, "add-transceiver", direction, caps, &t);
  return t;
}

GstWebRTCDataChannel *sfb_webrtc_create_data_channel(GstElement *webrtc, const char *label, gboolean ordered,
                                                     gint max_retransmits, gint max_packet_lifetime,
                                                     const char *protocol, gint id) {
  // webrtcbin is closed below READY and would only log a critical.
  if (GST_STATE(webrtc) < GST_STATE_READY) return NULL;
  GstStructure *options = gst_structure_new("application/data-channel", "ordered", G_TYPE_BOOLEAN, ordered, NULL);
  if (max_retransmits >= 0) gst_structure_set(options, "max-retransmits", G_TYPE_INT, max_retransmits, NULL);
  if (max_packet_lifetime >= 0) gst_structure_set(options, "max-packet-lifetime", G_TYPE_INT, max_packet_lifetime, NULL);
  if (protocol != NULL) gst_structure_set(options, "protocol", G_TYPE_STRING, protocol, NULL);
  if (id >= 0) gst_structure_set(options, "negotiated", G_TYPE_BOOLEAN, TRUE, "id", G_TYPE_INT, id, NULL);
  GstWebRTCDataChannel *channel = NULL;
  g_signal_emit_by_name(webrtc, "create-data-channel", label, options, &channel);
  gst_structure_free(options);
  return channel;
}

GstWebRTCDataChannelState sfb_data_channel_ready_state(GstWebRTCDataChannel *channel) {
  GstWebRTCDataChannelState state = GST_WEBRTC_DATA_CHANNEL_STATE_CLOSED;
  g_object_get(channel, "ready-state", &state, NULL);
  return state;
}

char *sfb_data_channel_label(GstWebRTCDataChannel *channel) {
  char *label = NULL;
  g_object_get(channel, "label", &label, NULL);
  return label;
}

char *sfb_webrtc_pad_mid(GstPad *pad) {
  if (!g_object_class_find_property(G_OBJECT_GET_CLASS(pad), "transceiver")) return NULL;
  GstWebRTCRTPTransceiver *t = NULL;
  g_object_get(pad, "transceiver", &t, NULL);
  if (t == NULL) return NULL;
  char *mid = NULL;
  g_object_get(t, "mid", &mid, NULL);
  gst_object_unref(t);
  return mid;
}

int sfb_webrtc_lock_down_ice(GstElement *webrtc) {
  GObject *ice = NULL;
  g_object_get(webrtc, "ice-agent", &ice, NULL);
  if (ice == NULL) return 1;
  // In 1.22 this object is still floating: read it, never sink it, unref after (PITFALLS.md).
  if (g_object_class_find_property(G_OBJECT_GET_CLASS(ice), "ice-tcp"))
    g_object_set(ice, "ice-tcp", FALSE, NULL);
  int rc = 0;
  GObject *agent = NULL;
  if (g_object_class_find_property(G_OBJECT_GET_CLASS(ice), "agent"))
    g_object_get(ice, "agent", &agent, NULL);
  if (agent == NULL) {
    rc = 2;
  } else {
    g_object_set(agent, "upnp", FALSE, NULL);
    if (g_object_class_find_property(G_OBJECT_GET_CLASS(agent), "ice-tcp"))
      g_object_set(agent, "ice-tcp", FALSE, NULL);
    g_object_unref(agent);
  }
  g_object_unref(ice);
  return rc;
}

const GstWebRTCSessionDescription *sfb_structure_get_sdp(const GstStructure *s, const char *field) {
  const GValue *v = gst_structure_get_value(s, field);
  if (v == NULL || !G_VALUE_HOLDS(v, GST_TYPE_WEBRTC_SESSION_DESCRIPTION)) return NULL;
  return g_value_get_boxed(v);
}

char *sfb_structure_get_error_message(const GstStructure *s) {
  const GValue *v = gst_structure_get_value(s, "error");
  if (v == NULL || !G_VALUE_HOLDS(v, G_TYPE_ERROR)) return NULL;
  const GError *e = g_value_get_boxed(v);
  return e ? g_strdup(e->message) : NULL;
}

void sfb_probe_info_replace_buffer(GstPadProbeInfo *info, GstBuffer *buffer) {
  GstBuffer *old = GST_PAD_PROBE_INFO_BUFFER(info);
  GST_PAD_PROBE_INFO_DATA(info) = buffer;
  if (old) gst_buffer_unref(old);
}

GstBuffer *sfb_probe_info_buffer(GstPadProbeInfo *info) {
  return GST_PAD_PROBE_INFO_BUFFER(info);
}

gint64 sfb_pad_buffer_age(GstPad *pad, GstBuffer *buffer) {
  if (!GST_BUFFER_PTS_IS_VALID(buffer)) return -1;
  GstElement *element = gst_pad_get_parent_element(pad);
  if (element == NULL) return -1;
  GstClock *clock = gst_element_get_clock(element);
  GstClockTime base = gst_element_get_base_time(element);
  gst_object_unref(element);
  if (clock == NULL) return -1;
  GstClockTime now = gst_clock_get_time(clock);
  gst_object_unref(clock);
  GstEvent *event = gst_pad_get_sticky_event(pad, GST_EVENT_SEGMENT, 0);
  if (event == NULL) return -1;
  const GstSegment *segment = NULL;
  gst_event_parse_segment(event, &segment);
  GstClockTime running = gst_segment_to_running_time(segment, GST_FORMAT_TIME, GST_BUFFER_PTS(buffer));
  gst_event_unref(event);
  if (!GST_CLOCK_TIME_IS_VALID(running) || now < base) return -1;
  return (gint64)(now - base) - (gint64)running;
}

gulong sfb_signal_connect(gpointer instance, const char *signal, GCallback handler, gpointer data, GClosureNotify notify) {
  return g_signal_connect_data(instance, signal, handler, data, notify, 0);
}

gboolean sfb_is_pipeline(GstElement *element) {
  return GST_IS_PIPELINE(element);
}

guint sfb_object_refcount(gpointer object) {
  return (guint)g_atomic_int_get((gint *)&G_OBJECT(object)->ref_count);
}

#include <gst/pbutils/pbutils.h>

static char *sfb_first_caps(GList *streams) {
  if (streams == NULL) return NULL;
  GstCaps *caps = gst_discoverer_stream_info_get_caps(GST_DISCOVERER_STREAM_INFO(streams->data));
  char *text = caps ? gst_caps_to_string(caps) : NULL;
  if (caps) gst_caps_unref(caps);
  return text;
}

int sfb_discover(const char *uri, guint timeout_seconds, char **audio_caps, char **video_caps,
                 guint64 *duration_ns, char **error) {
  *audio_caps = *video_caps = *error = NULL;
  *duration_ns = 0;
  GError *err = NULL;
  GstDiscoverer *d = gst_discoverer_new((GstClockTime)timeout_seconds * GST_SECOND, &err);
  if (d == NULL) {
    *error = g_strdup(err ? err->message : "cannot create a discoverer");
    g_clear_error(&err);
    return 1;
  }
  GstDiscovererInfo *info = gst_discoverer_discover_uri(d, uri, &err);
  int rc = 0;
  if (info == NULL || gst_discoverer_info_get_result(info) != GST_DISCOVERER_OK) {
    *error = g_strdup(err ? err->message : "not a media file GStreamer can read");
    rc = 1;
  } else {
    GList *a = gst_discoverer_info_get_audio_streams(info), *v = gst_discoverer_info_get_video_streams(info);
    *audio_caps = sfb_first_caps(a);
    *video_caps = sfb_first_caps(v);
    gst_discoverer_stream_info_list_free(a);
    gst_discoverer_stream_info_list_free(v);
    *duration_ns = gst_discoverer_info_get_duration(info);
  }
  g_clear_error(&err);
  if (info) g_object_unref(info);
  g_object_unref(d);
  return rc;
}

// An `identity` that also answers to the jitterbuffer properties rtpbin and webrtcbin set on
// every jitterbuffer (`latency`, `do-retransmission`), which it ignores: without them GLib
// warns on every stream.
enum { PLAIN_JB_PROP_0, PLAIN_JB_PROP_LATENCY, PLAIN_JB_PROP_DO_RETRANSMISSION };

static void sfb_plain_jb_set(GObject *o, guint id, const GValue *v, GParamSpec *p) { (void)o; (void)id; (void)v; (void)p; }

static void sfb_plain_jb_get(GObject *o, guint id, GValue *v, GParamSpec *p) {
  (void)o; (void)p;
  if (id == PLAIN_JB_PROP_LATENCY) g_value_set_uint(v, 0);
  else g_value_set_boolean(v, FALSE);
}

static void sfb_plain_jb_class_init(gpointer klass, gpointer data) {
  (void)data;
  GObjectClass *c = G_OBJECT_CLASS(klass);
  c->set_property = sfb_plain_jb_set;
  c->get_property = sfb_plain_jb_get;
  g_object_class_install_property(c, PLAIN_JB_PROP_LATENCY,
      g_param_spec_uint("latency", "Latency", "Ignored: packets are not held", 0, G_MAXUINT, 0, G_PARAM_READWRITE));
  g_object_class_install_property(c, PLAIN_JB_PROP_DO_RETRANSMISSION,
      g_param_spec_boolean("do-retransmission", "Retransmission", "Ignored", FALSE, G_PARAM_READWRITE));
}

static GType sfb_plain_jb_type(void) {
  static gsize type = 0;
  if (g_once_init_enter(&type)) {
    GType t = 0;
    GstElementFactory *f = gst_element_factory_find("identity");
    GstPluginFeature *loaded = f ? gst_plugin_feature_load(GST_PLUGIN_FEATURE(f)) : NULL;
    GType parent = loaded ? gst_element_factory_get_element_type(GST_ELEMENT_FACTORY(loaded)) : 0;
    if (parent != 0) {
      GTypeQuery q;
      g_type_query(parent, &q);
      GTypeInfo info = { (guint16)q.class_size, NULL, NULL, sfb_plain_jb_class_init, NULL, NULL, (guint16)q.instance_size, 0, NULL, NULL };
      t = g_type_register_static(parent, "SfbPlainJitterBuffer", &info, 0);
    }
    if (loaded) gst_object_unref(loaded);
    if (f) gst_object_unref(f);
    g_once_init_leave(&type, t);
  }
  return (GType)type;
}

static GstElement *sfb_plain_jitterbuffer(GstElement *rtpbin, guint session, gpointer data) {
  (void)rtpbin; (void)session; (void)data;
  // No queue, no timer thread: packets go on in the thread that received them.
  GType t = sfb_plain_jb_type();
  if (t == 0) return NULL;  // rtpbin falls back to its rtpjitterbuffer
  GstElement *e = GST_ELEMENT(g_object_new(t, NULL));
  g_object_set(e, "silent", TRUE, NULL);
  return e;
}

int sfb_webrtc_plain_jitterbuffers(GstElement *webrtc) {
  GstElement *rtpbin = gst_bin_get_by_name(GST_BIN(webrtc), "rtpbin");
  if (rtpbin == NULL) return 1;
  if (g_signal_lookup("request-jitterbuffer", G_OBJECT_TYPE(rtpbin)) == 0) {
    gst_object_unref(rtpbin);
    return 2;
  }
  g_signal_connect(rtpbin, "request-jitterbuffer", G_CALLBACK(sfb_plain_jitterbuffer), NULL);
  gst_object_unref(rtpbin);
  return 0;
}
