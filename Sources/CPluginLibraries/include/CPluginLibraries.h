// What sfubot does behind GStreamer's plugins, in the C libraries they loaded (libnice here;
// the OpenSSL libsrtp2 preload is GStreamerKit's PluginLibraries/SRTPLibrary.swift): reached by
// soname with dlopen(RTLD_NOLOAD), since neither libnice nor webrtcbin offers the setting. It
// could go once webrtcbin lets a receive buffer be asked for. Used by GStreamerKit alone
// (PluginLibraries/ReceiveBuffer.swift); every symbol prefixed sfb_.
#ifndef CPLUGINLIBRARIES_H
#define CPLUGINLIBRARIES_H
#include <gst/gst.h>

/// Sets the receive buffer of each socket libnice selected for webrtcbin's streams to `bytes`
/// (past net.core.rmem_max where the process may). Returns how many sockets it set (0: none
/// selected yet), or -1 (no libnice agent). `smallest`: the least buffer now held, in bytes.
int sfb_webrtc_enlarge_receive_buffers(GstElement *webrtc, int bytes, int *smallest);

/// Packets the kernel dropped on those sockets because their receive buffer was full (the
/// reader fell behind), since they were opened; -1 when none is selected yet.
gint64 sfb_webrtc_receive_drops(GstElement *webrtc);

#endif
