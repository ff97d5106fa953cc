/* srtaccess: access control of a sibling srtsrc listener.
 *
 * Example (the element stands alone, unlinked, in the same bin):
 *   gst-launch-1.0 -m srtsrc name=src mode=listener localport=9000 pbkeylen=16 ! ... \
 *       srtaccess source=src passphrase-fd=3   3< file-holding-the-passphrase
 *
 * 1. The passphrase. With "passphrase-fd" set, on NULL->READY the element reads
 *    the passphrase from that descriptor (bytes up to end of file, 10-79
 *    printable ASCII characters, SRT's own limits; the engine passes a pipe
 *    that holds it and is then closed), closes the descriptor, sets
 *    "passphrase" on the sibling srtsrc, and wipes its own copy. srtsrc's
 *    properties are "changeable only in NULL or READY state" and srtsrc opens
 *    its socket on READY->PAUSED; a bin takes all its children to READY before
 *    any goes to PAUSED, so the passphrase is in place before the socket
 *    exists. The secret is never an argv token: /proc/PID/cmdline is readable
 *    by every user of the host. A failure (descriptor not open, nothing read
 *    within 5 s, a passphrase out of SRT's limits, no srtsrc) is an element
 *    error and the state change fails: the pipeline never listens without
 *    the passphrase it was given.
 *    srtsrc 1.22 prints its parameters, the passphrase among them, at DEBUG
 *    level ("Opening SRT socket with parameters"): with a passphrase the
 *    element caps the "srtobject" and "srtlib" debug categories at INFO.
 *
 * 2. Refused callers. libsrt refuses a caller inside its handshake (wrong or
 *    missing passphrase, and other reasons) without telling srtsrc; what it
 *    says about it goes through srtsrc's libsrt log handler into the
 *    GStreamer debug category "srtlib" (libsrt's LOG_WARNING is GStreamer's
 *    INFO). The element keeps that category at INFO or more, watches it with
 *    a log function of its own and, for "processConnectRequest: rsp(REJECT):
 *    <code> - <text>", posts an "srtaccess" element message with event
 *    "rejected", libsrt's reject code and text, and the caller's address
 *    (from srtsrc's "caller-connecting" signal, emitted in the same libsrt
 *    thread just before; the element turns srtsrc's "authentication" on,
 *    without which 1.22 never emits it, and accepts every caller there:
 *    libsrt checks the passphrase after it). srtsrc's "caller-added" posts
 *    event "accepted".
 *    So that raising the threshold does not print libsrt's lines where the
 *    user did not ask for them, the element takes the place of GStreamer's
 *    default log function (when GST_DEBUG_FILE is not set: the default then
 *    writes to stderr) and forwards every message to it except "srtlib" ones
 *    above the threshold the user had set. Messages and fields:
 *    docs/elements-srtaccess.md.
 *
 * 3. libsrt's receive threads run real time. libsrt takes the packets off
 *    the socket in a thread of its own ("SRT:RcvQ") and hands them to the
 *    reader at their delivery time from another ("SRT:TsbPd", which the
 *    receive thread starts when a connection's data begins); both are
 *    SCHED_OTHER. On a host whose real-time threads (the clock bridge's)
 *    take most of the CPU they were late by 100-200 ms at once in many
 *    pipelines (24 on 2 cores), and the bridges ran dry with "input late".
 *    caller-connecting runs in the receive thread, so there the element asks
 *    SCHED_FIFO RECEIVE_RT_PRIORITY for it, once per thread; the delivery
 *    threads it starts afterwards inherit it (glibc's threads inherit their
 *    creator's policy). Refused (no CAP_SYS_NICE, RLIMIT_RTPRIO too low)
 *    they stay SCHED_OTHER, said at INFO. Both block on every packet; the
 *    process's RLIMIT_RTTIME and the clock bridge's guard bound them as
 *    the bridge's own threads (docs/operations.md, "Real time"). srtsrc's
 *    own streaming thread, which reads what they deliver, gets SCHED_FIFO
 *    SOURCE_RT_PRIORITY at its first buffer (source_thread_realtime).
 *
 * 4. A caller that calls again. srtsrc 1.22 accepts one caller and reads it
 *    until libsrt says it is broken (SRT's peer idle timeout, 5 s, for a
 *    caller that vanished without closing); it then closes its listener and
 *    opens a new one, and a caller that called in between (queued on the old
 *    listener) goes with it. With "reconnect-ms" above 0 the element decides
 *    in caller-connecting: while srtsrc holds a caller, the new one is let
 *    in and a thread of the element takes it off srtsrc's listener
 *    (srt_accept) and waits until the held caller has delivered no buffer on
 *    srtsrc's src pad for reconnect-ms. If the held caller delivers
 *    throughout reconnect-ms + 0.5 s, the new connection is closed (event
 *    "rejected", busy=true, reject-code 0); otherwise the new socket goes in
 *    the held caller's place: into the epoll set srtsrc's read waits on,
 *    before the dead socket is taken out and closed. A caller while a
 *    thread runs is refused in the handshake (busy=true, libsrt's 1000).
 *    srtsrc's read loop then receives from the new socket without noticing;
 *    its listener stays open. A held socket that has already ended (srtsrc
 *    is about to close it and re-open) is left to srtsrc; the thread waits
 *    for that and gives srtsrc the new caller as its next one. This reads srtsrc's private structures as
 *    GStreamer 1.22 lays them out (checked: plugin version 1.22.x, the
 *    object pointing back at the element) and calls libsrt through the
 *    library srtsrc loaded; with another GStreamer the element does neither
 *    and says so once.
 *
 * The log hook is per process (GStreamer's log functions are): it is
 * installed once, never removed, and posts to the last srtaccess element that
 * went to READY (held by a weak reference). The engine runs one per process.
 */
#define _GNU_SOURCE             /* dl_iterate_phdr */
#include <gst/gst.h>
#include <gst/base/gstpushsrc.h>
#include <gio/gio.h>

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

GST_DEBUG_CATEGORY_STATIC (srt_access_debug);
#define GST_CAT_DEFAULT srt_access_debug

#define DEFAULT_SOURCE        "src"
#define DEFAULT_FD            -1
#define PASSPHRASE_MIN        10
#define PASSPHRASE_MAX        79
#define READ_TIMEOUT_MS       5000
/* how long the caller's address from caller-connecting stays the one a
 * rejection in the same thread is about */
#define PEER_FRESH_US         (2 * G_USEC_PER_SEC)
#define REJECT_MARK           "rsp(REJECT): "
/* libsrt's receive and delivery threads: above the thread that reads what
 * they deliver (the clock bridge's input, 5), below its output (10), within
 * the unit's LimitRTPRIO */
#define RECEIVE_RT_PRIORITY   6
/* srtsrc's streaming thread (read, typefind, demux, decode, into the clock
 * bridge): the bridge's INPUT_RT_PRIORITY, asked here at its first buffer */
#define SOURCE_RT_PRIORITY    5
#define DEFAULT_RECONNECT_MS  500
#define MAX_RECONNECT_MS      60000
/* how long the takeover waits for libsrt to queue the caller it let in */
#define TAKEOVER_WAIT_MS      3000

#define GST_TYPE_SRT_ACCESS (gst_srt_access_get_type ())
G_DECLARE_FINAL_TYPE (GstSrtAccess, gst_srt_access, GST, SRT_ACCESS,
    GstElement);

struct _GstSrtAccess
{
  GstElement parent;

  /* properties, under the object lock */
  gchar *source;
  gint passphrase_fd;

  /* the descriptor already read (srtsrc keeps the passphrase it was given:
   * a later NULL->READY does not read again); change_state only */
  gint fd_read;

  /* atomic: a held caller idle this long gives way to a new one; 0: off */
  gint reconnect_ms;

  /* the srtsrc whose signals are connected; change_state only */
  GstElement *srtsrc;
  gulong connecting_id;
  gulong added_id;
  gulong removed_id;
  GstPad *srtsrc_pad;
  gulong probe_id;

  /* the held caller (atomic): srtsrc holds one, since when, and when its
   * last buffer left srtsrc (g_get_monotonic_time) */
  gint held;
  gint64 held_since;
  gint64 last_buffer;
  /* atomic: a takeover thread is running */
  gint taking_over;
  /* atomic: the next buffer is a new caller's first: post "first-packet" */
  gint announce_first;
};

enum
{
  PROP_0,
  PROP_SOURCE,
  PROP_PASSPHRASE_FD,
  PROP_RECONNECT_MS
};

G_DEFINE_TYPE (GstSrtAccess, gst_srt_access, GST_TYPE_ELEMENT);
GST_ELEMENT_REGISTER_DEFINE (srtaccess, "srtaccess", GST_RANK_NONE,
    GST_TYPE_SRT_ACCESS);

/* ---- the per-process log hook ---------------------------------------- */

typedef struct
{
  gchar *address;
  gint64 at;                    /* g_get_monotonic_time () */
  gboolean busy;                /* refused: the held caller is delivering */
} PeerNote;

static void
peer_note_free (gpointer data)
{
  PeerNote *note = data;

  g_free (note->address);
  g_free (note);
}

/* the caller's address, per libsrt receive thread */
static GPrivate peer_key = G_PRIVATE_INIT (peer_note_free);

static struct
{
  GWeakRef element;             /* where messages go */
  GstDebugCategory *srtlib;
  GstDebugLevel srtlib_shown;   /* printed up to this level */
  gboolean replaces_default;
  gint has_passphrase;          /* atomic: the element set one */
} hook;

static GstDebugCategory *
find_category (const gchar * name)
{
  GSList *all = gst_debug_get_all_categories ();
  GstDebugCategory *found = NULL;

  for (GSList * l = all; l != NULL; l = l->next) {
    if (strcmp (gst_debug_category_get_name (l->data), name) == 0) {
      found = l->data;
      break;
    }
  }
  g_slist_free (all);
  return found;
}

static void
post_event (GstElement * element, GstStructure * s)
{
  gst_element_post_message (element,
      gst_message_new_element (GST_OBJECT (element), s));
}

/* "<code> - <text>" after REJECT_MARK in libsrt's line */
static void
on_srtlib_line (const gchar * text)
{
  const gchar *mark = text != NULL ? strstr (text, REJECT_MARK) : NULL;
  gchar *end = NULL;
  gint64 code;
  const gchar *reason;
  GstElement *element;
  PeerNote *peer;
  GstStructure *s;

  if (mark == NULL)
    return;
  mark += strlen (REJECT_MARK);
  code = g_ascii_strtoll (mark, &end, 10);
  if (end == mark || code < 0 || code > G_MAXINT)
    return;
  reason = g_str_has_prefix (end, " - ") ? end + 3 : "";

  element = g_weak_ref_get (&hook.element);
  if (element == NULL)
    return;
  s = gst_structure_new ("srtaccess", "event", G_TYPE_STRING, "rejected",
      NULL);
  peer = g_private_get (&peer_key);
  if (peer != NULL && g_get_monotonic_time () - peer->at > PEER_FRESH_US)
    peer = NULL;
  if (peer != NULL && peer->address != NULL)
    gst_structure_set (s, "peer", G_TYPE_STRING, peer->address, NULL);
  gst_structure_set (s, "reject-code", G_TYPE_INT, (gint) code,
      "reason", G_TYPE_STRING, reason, "passphrase", G_TYPE_BOOLEAN,
      g_atomic_int_get (&hook.has_passphrase) != 0, "busy", G_TYPE_BOOLEAN,
      peer != NULL && peer->busy, NULL);
  /* this rejection used the address: a later one without a
   * caller-connecting (refused before libsrt's callback) gets none */
  g_private_replace (&peer_key, NULL);
  post_event (element, s);
  gst_object_unref (element);
}

static void
access_log_function (GstDebugCategory * category, GstDebugLevel level,
    const gchar * file, const gchar * function, gint line, GObject * object,
    GstDebugMessage * message, gpointer user_data)
{
  if (category == hook.srtlib) {
    if (level <= GST_LEVEL_INFO)
      on_srtlib_line (gst_debug_message_get (message));
    if (level > hook.srtlib_shown)
      return;
  }
  if (hook.replaces_default)
    gst_debug_log_default (category, level, file, function, line, object,
        message, NULL);
}

/* Once per process; FALSE when there is no srtlib category (no srt plugin) */
static gboolean
install_hook (void)
{
  static gsize done = 0;
  static gboolean ok = FALSE;

  if (g_once_init_enter (&done)) {
    GstDebugCategory *srtlib = find_category ("srtlib");

    if (srtlib != NULL) {
      GstDebugLevel threshold = gst_debug_category_get_threshold (srtlib);
      const gchar *file = g_getenv ("GST_DEBUG_FILE");

      hook.srtlib = srtlib;
      hook.srtlib_shown = threshold;
      /* with GST_DEBUG_FILE the default writes to a file whose handle we
       * cannot reach: it stays, and libsrt's INFO lines go to that file */
      hook.replaces_default = file == NULL || *file == '\0';
      if (threshold < GST_LEVEL_INFO)
        gst_debug_category_set_threshold (srtlib, GST_LEVEL_INFO);
      if (hook.replaces_default)
        gst_debug_remove_log_function (gst_debug_log_default);
      gst_debug_add_log_function (access_log_function, NULL, NULL);
      ok = TRUE;
    }
    g_once_init_leave (&done, 1);
  }
  return ok;
}

/* srtsrc prints its parameters, the passphrase among them, at DEBUG */
static void
cap_secret_categories (void)
{
  static const gchar *const names[] = { "srtobject", "srtlib" };

  for (gsize i = 0; i < G_N_ELEMENTS (names); i++) {
    GstDebugCategory *category = find_category (names[i]);

    if (category != NULL
        && gst_debug_category_get_threshold (category) > GST_LEVEL_INFO)
      gst_debug_category_set_threshold (category, GST_LEVEL_INFO);
  }
  if (hook.srtlib_shown > GST_LEVEL_INFO)
    hook.srtlib_shown = GST_LEVEL_INFO;
}

/* ---- addresses and threads ------------------------------------------ */

/* host:port, IPv6 in brackets (GLib's own text for an inet address) */
static gchar *
address_text (GSocketAddress * address)
{
  return G_IS_INET_SOCKET_ADDRESS (address) ?
      g_socket_connectable_to_string (G_SOCKET_CONNECTABLE (address)) : NULL;
}

/* the calling thread at SCHED_FIFO `priority`, asked once per thread
 * (`asked` is the caller's thread-local flag); `which` names it at INFO */
static void
thread_realtime (gboolean * asked, int priority, const gchar * which)
{
  struct sched_param param = {.sched_priority = priority };
  int err;

  if (*asked)
    return;
  *asked = TRUE;
  err = pthread_setschedparam (pthread_self (), SCHED_FIFO, &param);
  if (err == 0)
    GST_INFO ("%s runs SCHED_FIFO %d", which, priority);
  else
    GST_INFO ("%s stays SCHED_OTHER: SCHED_FIFO %d refused (%s)", which,
        priority, g_strerror (err));
}

/* libsrt's receive thread at SCHED_FIFO RECEIVE_RT_PRIORITY (see 3. above) */
static void
receive_thread_realtime (void)
{
  static __thread gboolean asked;

  thread_realtime (&asked, RECEIVE_RT_PRIORITY, "libsrt's receive thread");
}

/* srtsrc's streaming thread at SCHED_FIFO SOURCE_RT_PRIORITY from its first
 * buffer (see 3. above).  The clock bridge asks the same when the first
 * decoded audio reaches it; until then the thread does a stream's start-up
 * (typefind, the demuxer's tables, decodebin finding and loading the
 * decoder, then decoding what queued meanwhile) and, at SCHED_OTHER, got
 * only what the real-time threads left: with 24 pipelines on 2 cores whose
 * output threads already sent silence, the first audio came 15-55 s after
 * the callers connected, all of them at once, and the backlog then decoded
 * in a burst ran many bridges dry. */
static void
source_thread_realtime (void)
{
  static __thread gboolean asked;

  thread_realtime (&asked, SOURCE_RT_PRIORITY, "srtsrc's streaming thread");
}

/* ---- a caller that calls again (see 4. above) ------------------------ */

/* libsrt 1.5's C API, as srt.h declares it (SRTSOCKET is an int) */
#define SRT_EPOLL_IN_FLAG   0x1
#define SRT_EPOLL_ERR_FLAG  0x8
#define SRT_INVALID         (-1)

static struct
{
  int (*epoll_create) (void);
  int (*epoll_add_usock) (int eid, int sock, const int *events);
  int (*epoll_remove_usock) (int eid, int sock);
  int (*epoll_wait) (int eid, int *readfds, int *rnum, int *writefds,
      int *wnum, int64_t timeout_ms, int *lrfds, int *lrnum, int *lwfds,
      int *lwnum);
  int (*epoll_release) (int eid);
  int (*accept) (int sock, struct sockaddr * addr, int *addrlen);
  int (*close) (int sock);
  int (*getsockstate) (int sock);
} srt;

/* SRT_SOCKSTATUS: SRTS_BROKEN, the first of the ended states */
#define SRTS_BROKEN_STATE    6

/* GStreamer 1.22's srtsrc and its GstSRTObject (gstsrtsrc.h, gstsrtobject.h,
 * gstsrtobject.c of 1.22.0), as far as the element reads them */
typedef struct
{
  GstElement *element;
  GstUri *uri;
  GstStructure *parameters;
  gboolean opened;
  int sock;
  gint poll_id;
  gboolean sent_headers;
  GTask *listener_task;
  int listener_sock;
  gint listener_poll_id;
  GThread *thread;
  GMutex sock_lock;
  GCond sock_cond;
  GList *callers;
} SrtObject122;

typedef struct
{
  GstPushSrc parent;
  GstCaps *caps;
  SrtObject122 *srtobject;
} SrtSrc122;

typedef struct
{
  int sock;
  gint poll_id;
  GSocketAddress *sockaddr;
  gboolean sent_headers;
} SrtCaller122;

static int
find_libsrt (struct dl_phdr_info *info, size_t size, void *data)
{
  const gchar *base = info->dlpi_name ? strrchr (info->dlpi_name, '/') : NULL;

  if (base != NULL && g_str_has_prefix (base, "/libsrt")) {
    *(gchar **) data = g_strdup (info->dlpi_name);
    return 1;
  }
  return 0;
}

/* libsrt as srtsrc's plugin loaded it (the plugin is loaded with local
 * symbols, so the library is found by name among the loaded objects) */
static gboolean
bind_libsrt (void)
{
  static gsize done = 0;
  static gboolean ok = FALSE;

  if (g_once_init_enter (&done)) {
    gchar *path = NULL;
    void *lib;

    dl_iterate_phdr (find_libsrt, &path);
    lib = path != NULL ? dlopen (path, RTLD_NOW | RTLD_NOLOAD) : NULL;
    if (lib != NULL) {
      srt.epoll_create = dlsym (lib, "srt_epoll_create");
      srt.epoll_add_usock = dlsym (lib, "srt_epoll_add_usock");
      srt.epoll_remove_usock = dlsym (lib, "srt_epoll_remove_usock");
      srt.epoll_wait = dlsym (lib, "srt_epoll_wait");
      srt.epoll_release = dlsym (lib, "srt_epoll_release");
      srt.accept = dlsym (lib, "srt_accept");
      srt.close = dlsym (lib, "srt_close");
      srt.getsockstate = dlsym (lib, "srt_getsockstate");
      ok = srt.getsockstate && srt.epoll_create && srt.epoll_add_usock && srt.epoll_remove_usock
          && srt.epoll_wait && srt.epoll_release && srt.accept && srt.close;
    }
    GST_INFO ("libsrt %s%s", path ? path : "not loaded",
        ok ? "" : ": no caller takeover");
    g_free (path);
    g_once_init_leave (&done, 1);
  }
  return ok;
}

/* srtsrc's GstSRTObject when it is laid out as in GStreamer 1.22, else NULL */
static SrtObject122 *
srt_object_of (GstElement * srtsrc)
{
  GstElementFactory *factory = gst_element_get_factory (srtsrc);
  GstPlugin *plugin = factory != NULL ?
      gst_plugin_feature_get_plugin (GST_PLUGIN_FEATURE (factory)) : NULL;
  const gchar *version = plugin != NULL ? gst_plugin_get_version (plugin) : NULL;
  SrtObject122 *object = NULL;

  if (version != NULL && g_str_has_prefix (version, "1.22.")
      && strcmp (G_OBJECT_TYPE_NAME (srtsrc), "GstSRTSrc") == 0) {
    object = ((SrtSrc122 *) srtsrc)->srtobject;
    if (object == NULL || object->element != srtsrc)
      object = NULL;
  }
  if (plugin != NULL)
    gst_object_unref (plugin);
  return object;
}

static GstPadProbeReturn
on_srtsrc_buffer (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  GstSrtAccess *self = user_data;

  source_thread_realtime ();
  /* 64-bit stores are atomic on the targets the engine runs on */
  self->last_buffer = g_get_monotonic_time ();
  if (g_atomic_int_compare_and_exchange (&self->announce_first, 1, 0))
    post_event (GST_ELEMENT (self), gst_structure_new ("srtaccess", "event",
            G_TYPE_STRING, "first-packet", NULL));
  return GST_PAD_PROBE_OK;
}

static void
post_accepted (GstSrtAccess * self, GSocketAddress * address,
    gboolean replaced)
{
  gchar *peer = address_text (address);
  GstStructure *s = gst_structure_new ("srtaccess", "event", G_TYPE_STRING,
      "accepted", NULL);

  if (peer != NULL)
    gst_structure_set (s, "peer", G_TYPE_STRING, peer, NULL);
  if (replaced)
    gst_structure_set (s, "replaced", G_TYPE_BOOLEAN, TRUE, NULL);
  g_free (peer);
  post_event (GST_ELEMENT (self), s);
}

/* How long one wait on the listener lasts before srt_accept is tried again */
#define ACCEPT_POLL_MS 20

/* Waits up to TAKEOVER_WAIT_MS for libsrt to queue the caller on srtsrc's
 * listener and takes it. srt_accept is tried first and after every wait:
 * libsrt raises a listener's read event only when a caller is queued, never
 * when the listener joins an epoll set with one already queued (CUDT::addEPoll
 * skips a socket that is not connected), so a caller whose handshake ended
 * before this thread's epoll set existed would never be reported; it would
 * stay in the listener's queue (backlog 1) and libsrt would refuse every
 * later caller with SRT_REJ_BACKLOG until srtsrc re-opens its listener.
 * srtsrc's listener is non-blocking: srt_accept returns at once. */
static int
accept_queued (GstSrtAccess * self, int listener, GSocketAddress ** address)
{
  union
  {
    struct sockaddr_storage ss;
    struct sockaddr sa;
  } peer;
  int len = sizeof peer;
  int eid = srt.epoll_create ();
  int events = SRT_EPOLL_IN_FLAG | SRT_EPOLL_ERR_FLAG;
  int sock = SRT_INVALID;
  gint64 deadline = g_get_monotonic_time () + TAKEOVER_WAIT_MS * 1000;
  gint waits = 0;

  if (eid < 0)
    return SRT_INVALID;
  if (srt.epoll_add_usock (eid, listener, &events) == 0) {
    for (;;) {
      int ready = SRT_INVALID, n = 1;

      len = sizeof peer;
      sock = srt.accept (listener, &peer.sa, &len);
      if (sock != SRT_INVALID || g_get_monotonic_time () >= deadline)
        break;
      srt.epoll_wait (eid, &ready, &n, NULL, NULL, ACCEPT_POLL_MS, NULL, NULL,
          NULL, NULL);
      waits++;
    }
  }
  srt.epoll_release (eid);
  if (sock != SRT_INVALID) {
    *address = g_socket_address_new_from_native (&peer.sa, (gsize) len);
    GST_DEBUG_OBJECT (self, "caller taken off the listener %s",
        waits == 0 ? "at once (already queued)" : "after a wait");
  }
  return sock;
}

typedef enum
{
  HAND_OVER_DONE,
  HAND_OVER_LATER,              /* srtsrc is ending its caller: wait */
  HAND_OVER_NEVER
} HandOver;

/* srtsrc's read wakes every poll-timeout; its close and re-open take as long */
#define HANDOVER_TRIES   200
#define HANDOVER_WAIT_US (10 * 1000)

/* Under srtsrc's caller lock: the new socket into the held caller's place
 * (its old socket in *stale), or, when srtsrc has ended its caller and waits
 * for one, as its caller, as srtsrc's own listener thread would add it */
static HandOver
hand_over (SrtObject122 * object, int listener, int sock,
    GSocketAddress * address, int *stale, GSocketAddress ** old_address)
{
  int events = SRT_EPOLL_IN_FLAG | SRT_EPOLL_ERR_FLAG;
  SrtCaller122 *caller;

  if (object->callers == NULL) {
    caller = g_new0 (SrtCaller122, 1);
    caller->poll_id = srt.epoll_create ();
    if (caller->poll_id < 0
        || srt.epoll_add_usock (caller->poll_id, sock, &events) != 0) {
      if (caller->poll_id >= 0)
        srt.epoll_release (caller->poll_id);
      g_free (caller);
      return HAND_OVER_NEVER;
    }
    caller->sock = sock;
    caller->sockaddr = g_object_ref (address);
    object->callers = g_list_prepend (object->callers, caller);
    g_cond_signal (&object->sock_cond);
    return HAND_OVER_DONE;
  }
  if (object->listener_sock != listener)
    return HAND_OVER_NEVER;     /* srtsrc took another caller meanwhile */
  caller = object->callers->data;
  /* the held socket has ended: srtsrc's read returns and srtsrc closes it,
   * with whatever socket its entry then holds; hand over after that */
  if (srt.getsockstate (caller->sock) >= SRTS_BROKEN_STATE)
    return HAND_OVER_LATER;
  /* in first, then the dead one out: srtsrc's read never sees an empty set
   * (it would take that for the end of its caller) */
  if (srt.epoll_add_usock (caller->poll_id, sock, &events) != 0)
    return HAND_OVER_NEVER;
  *stale = caller->sock;
  srt.epoll_remove_usock (caller->poll_id, *stale);
  caller->sock = sock;
  *old_address = caller->sockaddr;
  caller->sockaddr = g_object_ref (address);
  return HAND_OVER_DONE;
}

/* Until the held caller has delivered nothing for reconnect-ms (TRUE), or
 * it delivered throughout reconnect-ms plus BUSY_GRACE_US (FALSE) */
#define BUSY_GRACE_US (500 * 1000)

static gboolean
wait_idle (GstSrtAccess * self)
{
  gint64 reconnect_us = (gint64) g_atomic_int_get (&self->reconnect_ms) * 1000;
  gint64 deadline = g_get_monotonic_time () + reconnect_us + BUSY_GRACE_US;

  for (;;) {
    gint64 now = g_get_monotonic_time ();

    if (!g_atomic_int_get (&self->held)
        || now - MAX (self->last_buffer, self->held_since) >= reconnect_us)
      return TRUE;
    if (now >= deadline)
      return FALSE;
    g_usleep (HANDOVER_WAIT_US);
  }
}

/* A caller let in while the held one delivered, closed again: said as a
 * refusal (reject-code 0: the element's, not libsrt's) */
static void
post_busy (GstSrtAccess * self, GSocketAddress * address)
{
  gchar *peer = address_text (address);
  GstStructure *s = gst_structure_new ("srtaccess", "event", G_TYPE_STRING,
      "rejected", NULL);

  if (peer != NULL)
    gst_structure_set (s, "peer", G_TYPE_STRING, peer, NULL);
  gst_structure_set (s, "reject-code", G_TYPE_INT, 0, "reason", G_TYPE_STRING,
      "the connected caller is delivering", "passphrase", G_TYPE_BOOLEAN,
      g_atomic_int_get (&hook.has_passphrase) != 0, "busy", G_TYPE_BOOLEAN,
      TRUE, NULL);
  GST_INFO_OBJECT (self, "caller %s closed: the held caller delivers",
      peer ? peer : "?");
  g_free (peer);
  post_event (GST_ELEMENT (self), s);
}

/* The takeover thread: the new caller in the held one's place */
static gpointer
take_over (gpointer data)
{
  GstSrtAccess *self = data;
  GstElement *srtsrc = NULL;
  SrtObject122 *object;
  GSocketAddress *address = NULL, *old_address = NULL;
  int listener, sock, stale = SRT_INVALID;

  GST_OBJECT_LOCK (self);
  if (self->srtsrc != NULL)
    srtsrc = gst_object_ref (self->srtsrc);
  GST_OBJECT_UNLOCK (self);
  object = srtsrc != NULL ? srt_object_of (srtsrc) : NULL;
  if (object == NULL)
    goto done;

  g_mutex_lock (&object->sock_lock);
  listener = object->listener_sock;
  g_mutex_unlock (&object->sock_lock);
  sock = listener != SRT_INVALID ? accept_queued (self, listener, &address) :
      SRT_INVALID;
  if (sock == SRT_INVALID) {
    GST_INFO_OBJECT (self, "the new caller did not reach srtsrc's listener");
    goto done;
  }

  if (!wait_idle (self)) {
    post_busy (self, address);
    srt.close (sock);
    goto done;
  }

  for (gint tries = 0; sock != SRT_INVALID && tries < HANDOVER_TRIES; tries++) {
    HandOver step;

    g_mutex_lock (&object->sock_lock);
    step = hand_over (object, listener, sock, address, &stale, &old_address);
    g_mutex_unlock (&object->sock_lock);
    if (step == HAND_OVER_DONE)
      sock = SRT_INVALID;
    else if (step == HAND_OVER_NEVER)
      break;
    else
      g_usleep (HANDOVER_WAIT_US);
  }

  if (sock != SRT_INVALID) {
    GST_WARNING_OBJECT (self, "could not hand the new caller to srtsrc");
    srt.close (sock);
    goto done;
  }
  if (stale != SRT_INVALID)
    srt.close (stale);
  self->held_since = g_get_monotonic_time ();
  g_atomic_int_set (&self->held, 1);
  g_atomic_int_set (&self->announce_first, 1);
  GST_INFO_OBJECT (self, "new caller in place of an idle one");
  post_accepted (self, address, TRUE);

done:
  g_clear_object (&old_address);
  g_clear_object (&address);
  if (srtsrc != NULL)
    gst_object_unref (srtsrc);
  g_atomic_int_set (&self->taking_over, 0);
  gst_object_unref (self);
  return NULL;
}

/* In libsrt's receive thread: while srtsrc holds a caller, start a takeover
 * thread for the new one (or refuse it, FALSE, while one runs). Takes no
 * lock srtsrc holds while it closes its listener (that waits for this
 * thread). */
static gboolean
decide_caller (GstSrtAccess * self, PeerNote * note)
{
  gint reconnect_ms = g_atomic_int_get (&self->reconnect_ms);
  GThread *thread;

  if (reconnect_ms <= 0 || !g_atomic_int_get (&self->held)
      || !bind_libsrt ())
    return TRUE;
  if (!g_atomic_int_compare_and_exchange (&self->taking_over, 0, 1)) {
    /* another caller is being put in place */
    note->busy = TRUE;
    return FALSE;
  }
  thread = g_thread_try_new ("srtaccess-takeover", take_over,
      gst_object_ref (self), NULL);
  if (thread == NULL) {
    g_atomic_int_set (&self->taking_over, 0);
    gst_object_unref (self);
    return TRUE;
  }
  g_thread_unref (thread);
  return TRUE;
}

/* ---- srtsrc's signals ------------------------------------------------- */

/* libsrt's listen callback, in its receive thread: note who is calling,
 * start a takeover when srtsrc holds a caller, and let the handshake go on
 * (libsrt itself checks the passphrase after it) */
static gboolean
on_caller_connecting (GstElement * srtsrc, GSocketAddress * address,
    const gchar * stream_id, gpointer user_data)
{
  PeerNote *note = g_new0 (PeerNote, 1);
  gboolean let_in;

  receive_thread_realtime ();

  note->address = address_text (address);
  note->at = g_get_monotonic_time ();
  let_in = decide_caller (GST_SRT_ACCESS (user_data), note);
  if (!let_in)
    GST_INFO_OBJECT (user_data, "caller %s refused: another is being taken",
        note->address ? note->address : "?");
  g_private_replace (&peer_key, note);
  return let_in;
}

static void
on_caller_added (GstElement * srtsrc, gint unused, GSocketAddress * address,
    gpointer user_data)
{
  GstSrtAccess *self = GST_SRT_ACCESS (user_data);

  self->held_since = g_get_monotonic_time ();
  g_atomic_int_set (&self->held, 1);
  g_atomic_int_set (&self->announce_first, 1);
  post_accepted (self, address, FALSE);
}

static void
on_caller_removed (GstElement * srtsrc, gint unused, GSocketAddress * address,
    gpointer user_data)
{
  g_atomic_int_set (&GST_SRT_ACCESS (user_data)->held, 0);
}

/* ---- the passphrase --------------------------------------------------- */

/* Reads up to end of file within READ_TIMEOUT_MS into buf (size > max).
 * Returns the length, or -1 with *why set. */
static gssize
read_secret (gint fd, gchar * buf, gsize size, const gchar ** why)
{
  gsize len = 0;
  gint64 deadline = g_get_monotonic_time () + READ_TIMEOUT_MS * 1000;

  for (;;) {
    struct pollfd pfd = { fd, POLLIN, 0 };
    gint64 left = (deadline - g_get_monotonic_time ()) / 1000;
    gint ready;
    gssize n;

    if (left <= 0) {
      *why = "nothing to read within 5 s";
      return -1;
    }
    ready = poll (&pfd, 1, (int) left);
    if (ready < 0 && errno == EINTR)
      continue;
    if (ready < 0) {
      *why = g_strerror (errno);
      return -1;
    }
    if (ready == 0)
      continue;
    if (pfd.revents & POLLNVAL) {
      *why = "the descriptor is not open";
      return -1;
    }
    n = read (fd, buf + len, size - len);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      *why = g_strerror (errno);
      return -1;
    }
    if (n == 0)
      return (gssize) len;
    len += (gsize) n;
    if (len == size) {
      *why = "more than 79 bytes";
      return -1;
    }
  }
}

static gboolean
valid_passphrase (const gchar * text, gsize len)
{
  if (len < PASSPHRASE_MIN || len > PASSPHRASE_MAX)
    return FALSE;
  for (gsize i = 0; i < len; i++) {
    if (text[i] < 0x20 || text[i] > 0x7e)
      return FALSE;
  }
  return TRUE;
}

static gboolean
apply_passphrase (GstSrtAccess * self, GstElement * srtsrc, gint fd)
{
  gchar buf[PASSPHRASE_MAX + 2];
  const gchar *why = NULL;
  gssize len;

  if (srtsrc == NULL
      || g_object_class_find_property (G_OBJECT_GET_CLASS (srtsrc),
          "passphrase") == NULL) {
    GST_ELEMENT_ERROR (self, CORE, FAILED,
        ("no srtsrc named \"%s\" to set the SRT passphrase on",
            self->source ? self->source : ""), (NULL));
    close (fd);
    return FALSE;
  }
  cap_secret_categories ();
  len = read_secret (fd, buf, sizeof buf, &why);
  close (fd);
  if (len >= 0 && !valid_passphrase (buf, (gsize) len))
    why = "it is not 10-79 printable ASCII characters";
  if (len < 0 || why != NULL) {
    GST_ELEMENT_ERROR (self, RESOURCE, READ,
        ("cannot read the SRT passphrase from descriptor %d: %s", fd, why),
        (NULL));
    memset (buf, 0, sizeof buf);
    return FALSE;
  }
  buf[len] = '\0';
  g_object_set (srtsrc, "passphrase", buf, NULL);
  memset (buf, 0, sizeof buf);
  GST_INFO_OBJECT (self, "SRT passphrase set on %s",
      GST_ELEMENT_NAME (srtsrc));
  return TRUE;
}

/* ---- element ---------------------------------------------------------- */

static GstElement *
find_sibling (GstSrtAccess * self, const gchar * name)
{
  GstObject *parent = gst_object_get_parent (GST_OBJECT (self));
  GstElement *found = NULL;

  if (parent != NULL && GST_IS_BIN (parent) && name != NULL && *name != '\0')
    found = gst_bin_get_by_name (GST_BIN (parent), name);
  if (parent != NULL)
    gst_object_unref (parent);
  return found;
}

static void
disconnect_source (GstSrtAccess * self)
{
  GstElement *srtsrc;

  if (self->srtsrc_pad != NULL && self->probe_id != 0)
    gst_pad_remove_probe (self->srtsrc_pad, self->probe_id);
  self->probe_id = 0;
  gst_clear_object (&self->srtsrc_pad);
  if (self->srtsrc == NULL)
    return;
  if (self->connecting_id != 0)
    g_signal_handler_disconnect (self->srtsrc, self->connecting_id);
  if (self->added_id != 0)
    g_signal_handler_disconnect (self->srtsrc, self->added_id);
  if (self->removed_id != 0)
    g_signal_handler_disconnect (self->srtsrc, self->removed_id);
  self->connecting_id = self->added_id = self->removed_id = 0;
  g_atomic_int_set (&self->held, 0);
  GST_OBJECT_LOCK (self);
  srtsrc = g_steal_pointer (&self->srtsrc);
  GST_OBJECT_UNLOCK (self);
  gst_object_unref (srtsrc);
}

/* the caller takeover: srtsrc's buffers timed, libsrt bound, 1.22 checked */
static void
watch_source (GstSrtAccess * self, GstElement * srtsrc)
{
  if (srt_object_of (srtsrc) == NULL || !bind_libsrt ()) {
    GST_WARNING_OBJECT (self, "%s is not GStreamer 1.22's srtsrc over libsrt: "
        "a caller that calls again waits for the held one to time out",
        GST_ELEMENT_NAME (srtsrc));
    return;
  }
  self->srtsrc_pad = gst_element_get_static_pad (srtsrc, "src");
  if (self->srtsrc_pad != NULL)
    self->probe_id = gst_pad_add_probe (self->srtsrc_pad,
        GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_BUFFER_LIST,
        on_srtsrc_buffer, self, NULL);
}

/* srtsrc 1.22 emits caller-connecting only with "authentication" on, which
 * it documents as the default but leaves off (never initialised); and its
 * setter falls through into "auto-reconnect", which is kept as it was. */
static void
enable_caller_connecting (GstElement * srtsrc)
{
  gboolean auto_reconnect = TRUE;

  if (g_object_class_find_property (G_OBJECT_GET_CLASS (srtsrc),
          "authentication") == NULL
      || g_object_class_find_property (G_OBJECT_GET_CLASS (srtsrc),
          "auto-reconnect") == NULL)
    return;
  g_object_get (srtsrc, "auto-reconnect", &auto_reconnect, NULL);
  g_object_set (srtsrc, "authentication", TRUE, NULL);
  g_object_set (srtsrc, "auto-reconnect", auto_reconnect, NULL);
}

static gboolean
start (GstSrtAccess * self)
{
  gchar *source;
  gint fd;
  GstElement *srtsrc;
  gboolean ok = TRUE;

  GST_OBJECT_LOCK (self);
  source = g_strdup (self->source);
  fd = self->passphrase_fd;
  GST_OBJECT_UNLOCK (self);

  srtsrc = find_sibling (self, source);
  if (fd >= 0 && fd != self->fd_read) {
    ok = apply_passphrase (self, srtsrc, fd);
    if (ok)
      self->fd_read = fd;
  }
  if (ok && srtsrc != NULL
      && g_signal_lookup ("caller-connecting", G_OBJECT_TYPE (srtsrc)) != 0
      && g_signal_lookup ("caller-added", G_OBJECT_TYPE (srtsrc)) != 0) {
    if (install_hook ()) {
      g_atomic_int_set (&hook.has_passphrase, fd >= 0);
      g_weak_ref_set (&hook.element, self);
    }
    enable_caller_connecting (srtsrc);
    GST_OBJECT_LOCK (self);
    self->srtsrc = gst_object_ref (srtsrc);
    GST_OBJECT_UNLOCK (self);
    self->connecting_id = g_signal_connect (srtsrc, "caller-connecting",
        G_CALLBACK (on_caller_connecting), self);
    self->added_id = g_signal_connect (srtsrc, "caller-added",
        G_CALLBACK (on_caller_added), self);
    self->removed_id = g_signal_connect (srtsrc, "caller-removed",
        G_CALLBACK (on_caller_removed), self);
    watch_source (self, srtsrc);
  } else if (ok) {
    GST_WARNING_OBJECT (self, "no srtsrc named \"%s\": no caller reports",
        source ? source : "");
  }
  if (srtsrc != NULL)
    gst_object_unref (srtsrc);
  g_free (source);
  return ok;
}

static void
stop (GstSrtAccess * self)
{
  GstElement *current = g_weak_ref_get (&hook.element);

  if (current == GST_ELEMENT (self))
    g_weak_ref_set (&hook.element, NULL);
  if (current != NULL)
    gst_object_unref (current);
  disconnect_source (self);
}

static GstStateChangeReturn
gst_srt_access_change_state (GstElement * element, GstStateChange transition)
{
  GstSrtAccess *self = GST_SRT_ACCESS (element);
  GstStateChangeReturn ret;

  if (transition == GST_STATE_CHANGE_NULL_TO_READY && !start (self))
    return GST_STATE_CHANGE_FAILURE;

  ret = GST_ELEMENT_CLASS (gst_srt_access_parent_class)->change_state
      (element, transition);

  if (transition == GST_STATE_CHANGE_READY_TO_NULL)
    stop (self);
  return ret;
}

static void
gst_srt_access_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstSrtAccess *self = GST_SRT_ACCESS (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_SOURCE:
      g_free (self->source);
      self->source = g_value_dup_string (value);
      break;
    case PROP_PASSPHRASE_FD:
      self->passphrase_fd = g_value_get_int (value);
      break;
    case PROP_RECONNECT_MS:
      g_atomic_int_set (&self->reconnect_ms, (gint) g_value_get_uint (value));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_srt_access_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec)
{
  GstSrtAccess *self = GST_SRT_ACCESS (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_SOURCE:
      g_value_set_string (value, self->source);
      break;
    case PROP_PASSPHRASE_FD:
      g_value_set_int (value, self->passphrase_fd);
      break;
    case PROP_RECONNECT_MS:
      g_value_set_uint (value, (guint) g_atomic_int_get (&self->reconnect_ms));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_srt_access_dispose (GObject * object)
{
  stop (GST_SRT_ACCESS (object));
  G_OBJECT_CLASS (gst_srt_access_parent_class)->dispose (object);
}

static void
gst_srt_access_finalize (GObject * object)
{
  GstSrtAccess *self = GST_SRT_ACCESS (object);

  g_free (self->source);
  G_OBJECT_CLASS (gst_srt_access_parent_class)->finalize (object);
}

static void
gst_srt_access_class_init (GstSrtAccessClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);

  gobject_class->set_property = gst_srt_access_set_property;
  gobject_class->get_property = gst_srt_access_get_property;
  gobject_class->dispose = gst_srt_access_dispose;
  gobject_class->finalize = gst_srt_access_finalize;

  g_object_class_install_property (gobject_class, PROP_SOURCE,
      g_param_spec_string ("source", "Source",
          "Name of the sibling srtsrc", DEFAULT_SOURCE,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_PASSPHRASE_FD,
      g_param_spec_int ("passphrase-fd", "Passphrase descriptor",
          "Descriptor the SRT passphrase is read from on NULL->READY, then "
          "closed (-1: none)", -1, G_MAXINT, DEFAULT_FD,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_RECONNECT_MS,
      g_param_spec_uint ("reconnect-ms", "Reconnect after",
          "A new caller replaces the held one when that has delivered nothing "
          "for this long (ms); while it delivers, new callers are refused. "
          "0: off (srtsrc's own behaviour)", 0, MAX_RECONNECT_MS,
          DEFAULT_RECONNECT_MS, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));

  element_class->change_state = gst_srt_access_change_state;
  gst_element_class_set_static_metadata (element_class,
      "SRT listener access", "Generic",
      "Sets a sibling srtsrc's passphrase from a file descriptor, reports "
      "the callers libsrt refuses and puts a returning caller in place of an "
      "idle one", "audio-engine");

  GST_DEBUG_CATEGORY_INIT (srt_access_debug, "srtaccess", 0,
      "SRT listener access");
  g_weak_ref_init (&hook.element, NULL);
}

static void
gst_srt_access_init (GstSrtAccess * self)
{
  self->source = g_strdup (DEFAULT_SOURCE);
  self->passphrase_fd = DEFAULT_FD;
  self->fd_read = -1;
  self->reconnect_ms = DEFAULT_RECONNECT_MS;
}
