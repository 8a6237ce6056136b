// GIO's TLS trust for the GStreamer elements that make their own TLS connections (rtmp2sink and
// rtmp2src for rtmps://): GIO is not in CGStreamer's headers, and only the CLI needs this, so it
// is a target of its own rather than a change every GStreamerKit user recompiles for.
#ifndef CTLSTRUST_H
#define CTLSTRUST_H

/// Makes the PEM certificates in `ca_file` the only ones GIO's TLS connections of this process
/// verify servers against (g_tls_file_database_new + g_tls_backend_set_default_database), in
/// place of the system's. Connections made after the call use it. Returns NULL on success, or
/// a message to free with sfb_tls_free_message.
char *sfb_tls_trust_only(const char *ca_file);

void sfb_tls_free_message(char *message);

#endif
