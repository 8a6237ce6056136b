// GStreamer's C API for Swift. webrtc and app headers need GST_USE_UNSTABLE_API.
#ifndef CGSTREAMER_H
#define CGSTREAMER_H
#define GST_USE_UNSTABLE_API 1
#include <gst/gst.h>
#include <gst/app/app.h>
#include <gst/base/gstaggregator.h>
#include <gst/sdp/sdp.h>
#include <gst/webrtc/webrtc.h>
#include <gst/pbutils/pbutils.h>
#endif
