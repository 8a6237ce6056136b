#include "CTLSTrust.h"
#include <gio/gio.h>

char *sfb_tls_trust_only(const char *ca_file) {
    GTlsBackend *backend = g_tls_backend_get_default();
    if (!g_tls_backend_supports_tls(backend)) {
        return g_strdup("GIO has no TLS backend (install glib-networking)");
    }
    GError *error = NULL;
    GTlsDatabase *database = g_tls_file_database_new(ca_file, &error);
    if (database == NULL) {
        char *message = g_strdup(error != NULL ? error->message : "no certificate database");
        g_clear_error(&error);
        return message;
    }
    g_tls_backend_set_default_database(backend, database);
    g_object_unref(database);
    return NULL;
}

void sfb_tls_free_message(char *message) { g_free(message); }
