// Finding webrtcbin's inner elements (shared by the send and receive shortcuts).
#ifndef SFB_ELEMENTS_H
#define SFB_ELEMENTS_H
#include <gst/gst.h>

// The one element made by `factory` inside `bin` (recursively), with a reference, or NULL if
// there is none or more than one; `*count` says how many there were.
GstElement *sfb_only_element(GstElement *bin, const char *factory, int *count);

#endif
