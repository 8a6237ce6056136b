// The receive buffer of webrtcbin's media sockets. A subscriber's one bundled socket carries
// every feed of the room (20 A/V phones: about 2,200 packets a second), and the kernel's default
// buffer (rmem_default, 208 KiB: about 90 packets of truesize) holds some 40 ms of them: a
// reader thread held up longer than that on a loaded machine loses packets in the kernel.
// libnice and webrtcbin offer no setting, so the socket is reached through libnice's API
// (dlopen by soname, RTLD_NOLOAD: the library GStreamer's nice plugin loaded).
#include "CPluginLibraries.h"
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/stat.h>

typedef GObject *(*selected_socket_fn)(GObject *agent, guint stream, guint component);
typedef int (*socket_fd_fn)(GObject *socket);

static gboolean find_functions(selected_socket_fn *selected, socket_fd_fn *fd_of) {
  void *nice = dlopen("libnice.so.10", RTLD_NOW | RTLD_NOLOAD);
  void *gio = dlopen("libgio-2.0.so.0", RTLD_NOW | RTLD_NOLOAD);
  // RTLD_NOLOAD took a reference; the plugin keeps its own.
  *selected = nice ? (selected_socket_fn)dlsym(nice, "nice_agent_get_selected_socket") : NULL;
  *fd_of = gio ? (socket_fd_fn)dlsym(gio, "g_socket_get_fd") : NULL;
  if (nice) dlclose(nice);
  if (gio) dlclose(gio);
  return *selected && *fd_of;
}

// SO_RCVBUFFORCE passes net.core.rmem_max with CAP_NET_ADMIN; without it, SO_RCVBUF is capped
// there. The kernel doubles what is asked (its bookkeeping) and getsockopt says what holds.
static int enlarge(int fd, int bytes) {
  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof bytes) != 0)
    (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
  int held = 0;
  socklen_t len = sizeof held;
  if (getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &held, &len) != 0) return -1;
  return held;
}

// The sockets libnice selected for webrtcbin's streams (at most `max`), each with a reference
// the caller drops (`release`) once done with its descriptor: an ICE restart cannot close one,
// and its number be reused, in between. Returns how many, or -1 (no libnice agent).
static int selected_fds(GstElement *webrtc, int *fds, GObject **held, int max) {
  selected_socket_fn selected = NULL;
  socket_fd_fn fd_of = NULL;
  if (!find_functions(&selected, &fd_of)) return -1;
  GObject *ice = NULL;
  g_object_get(webrtc, "ice-agent", &ice, NULL);
  if (ice == NULL) return -1;
  GObject *agent = NULL;
  if (g_object_class_find_property(G_OBJECT_GET_CLASS(ice), "agent")) g_object_get(ice, "agent", &agent, NULL);
  g_object_unref(ice);
  if (agent == NULL) return -1;
  int count = 0;
  // Stream ids count from 1; a bundled PeerConnection has one, component 1 (rtcp-mux).
  for (guint stream = 1; stream <= 16 && count < max; stream++) {
    for (guint component = 1; component <= 2 && count < max; component++) {
      GObject *socket = selected(agent, stream, component);
      if (socket == NULL) continue;
      held[count] = socket;
      fds[count++] = fd_of(socket);
    }
  }
  g_object_unref(agent);
  return count;
}

static void release(GObject **held, int n) {
  for (int i = 0; i < n; i++) g_object_unref(held[i]);
}

int sfb_webrtc_enlarge_receive_buffers(GstElement *webrtc, int bytes, int *smallest) {
  *smallest = 0;
  int fds[32];
  GObject *held[32];
  int n = selected_fds(webrtc, fds, held, 32), count = 0;
  for (int i = 0; i < n; i++) {
    int size = enlarge(fds[i], bytes);
    if (size < 0) continue;
    if (count == 0 || size < *smallest) *smallest = size;
    count++;
  }
  release(held, n);
  return n < 0 ? -1 : count;
}

// Adds the `drops` column of /proc/self/net/udp{,6} (this network namespace's sockets) for the
// sockets whose inode is in `inodes`.
static void add_drops(const char *table, const ino_t *inodes, int n, gint64 *drops) {
  FILE *f = fopen(table, "re");
  if (f == NULL) return;
  char line[512];
  if (fgets(line, sizeof line, f) == NULL) { fclose(f); return; }   // the header
  while (fgets(line, sizeof line, f) != NULL) {
    unsigned long inode = 0;
    long long dropped = 0;
    // sl local rem st tx:rx tr:when retrnsmt uid timeout inode ref pointer drops
    if (sscanf(line, "%*s %*s %*s %*s %*s %*s %*s %*s %*s %lu %*s %*s %lld", &inode, &dropped) != 2) continue;
    for (int i = 0; i < n; i++) if (inodes[i] == (ino_t)inode) *drops += dropped;
  }
  fclose(f);
}

gint64 sfb_webrtc_receive_drops(GstElement *webrtc) {
  int fds[32];
  GObject *held[32];
  int n = selected_fds(webrtc, fds, held, 32);
  if (n <= 0) return -1;
  ino_t inodes[32];
  for (int i = 0; i < n; i++) {
    struct stat st;
    inodes[i] = fstat(fds[i], &st) == 0 ? st.st_ino : 0;
  }
  release(held, n);
  gint64 drops = 0;
  add_drops("/proc/self/net/udp", inodes, n, &drops);
  add_drops("/proc/self/net/udp6", inodes, n, &drops);
  return drops;
}
