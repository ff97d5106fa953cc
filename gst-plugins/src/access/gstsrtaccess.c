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
 *    the bridge's own threads (docs/operations.md, "Real time").
 *
 * The log hook is per process (GStreamer's log functions are): it is
 * installed once, never removed, and posts to the last srtaccess element that
 * went to READY (held by a weak reference). The engine runs one per process.
 */
#include <gst/gst.h>
#include <gio/gio.h>

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
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
 * the unit's LimitRTPRIO=10 */
#define RECEIVE_RT_PRIORITY   6

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

  /* the srtsrc whose signals are connected; change_state only */
  GstElement *srtsrc;
  gulong connecting_id;
  gulong added_id;
};

enum
{
  PROP_0,
  PROP_SOURCE,
  PROP_PASSPHRASE_FD
};

G_DEFINE_TYPE (GstSrtAccess, gst_srt_access, GST_TYPE_ELEMENT);
GST_ELEMENT_REGISTER_DEFINE (srtaccess, "srtaccess", GST_RANK_NONE,
    GST_TYPE_SRT_ACCESS);

/* ---- the per-process log hook ---------------------------------------- */

typedef struct
{
  gchar *address;
  gint64 at;                    /* g_get_monotonic_time () */
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
  if (peer != NULL && g_get_monotonic_time () - peer->at <= PEER_FRESH_US)
    gst_structure_set (s, "peer", G_TYPE_STRING, peer->address, NULL);
  gst_structure_set (s, "reject-code", G_TYPE_INT, (gint) code,
      "reason", G_TYPE_STRING, reason, "passphrase", G_TYPE_BOOLEAN,
      g_atomic_int_get (&hook.has_passphrase) != 0, NULL);
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

/* ---- srtsrc's signals ------------------------------------------------- */

/* host:port, IPv6 in brackets (GLib's own text for an inet address) */
static gchar *
address_text (GSocketAddress * address)
{
  return G_IS_INET_SOCKET_ADDRESS (address) ?
      g_socket_connectable_to_string (G_SOCKET_CONNECTABLE (address)) : NULL;
}

/* the calling thread (libsrt's receive thread) at SCHED_FIFO
 * RECEIVE_RT_PRIORITY, asked once per thread (see 3. above) */
static void
receive_thread_realtime (void)
{
  static __thread gboolean asked;
  struct sched_param param = {.sched_priority = RECEIVE_RT_PRIORITY };
  int err;

  if (asked)
    return;
  asked = TRUE;
  err = pthread_setschedparam (pthread_self (), SCHED_FIFO, &param);
  if (err == 0)
    GST_INFO ("libsrt's receive thread runs SCHED_FIFO %d",
        RECEIVE_RT_PRIORITY);
  else
    GST_INFO ("libsrt's receive thread stays SCHED_OTHER: SCHED_FIFO %d "
        "refused (%s)", RECEIVE_RT_PRIORITY, g_strerror (err));
}

/* libsrt's listen callback, in its receive thread: note who is calling and
 * let the handshake go on (libsrt itself checks the passphrase after it) */
static gboolean
on_caller_connecting (GstElement * srtsrc, GSocketAddress * address,
    const gchar * stream_id, gpointer user_data)
{
  PeerNote *note = g_new0 (PeerNote, 1);

  receive_thread_realtime ();

  note->address = address_text (address);
  note->at = g_get_monotonic_time ();
  g_private_replace (&peer_key, note);
  return TRUE;
}

static void
on_caller_added (GstElement * srtsrc, gint unused, GSocketAddress * address,
    gpointer user_data)
{
  GstElement *element = GST_ELEMENT (user_data);
  gchar *peer = address_text (address);
  GstStructure *s = gst_structure_new ("srtaccess", "event", G_TYPE_STRING,
      "accepted", NULL);

  if (peer != NULL)
    gst_structure_set (s, "peer", G_TYPE_STRING, peer, NULL);
  g_free (peer);
  post_event (element, s);
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
  if (self->srtsrc == NULL)
    return;
  if (self->connecting_id != 0)
    g_signal_handler_disconnect (self->srtsrc, self->connecting_id);
  if (self->added_id != 0)
    g_signal_handler_disconnect (self->srtsrc, self->added_id);
  self->connecting_id = self->added_id = 0;
  gst_clear_object (&self->srtsrc);
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
    self->srtsrc = gst_object_ref (srtsrc);
    self->connecting_id = g_signal_connect (srtsrc, "caller-connecting",
        G_CALLBACK (on_caller_connecting), NULL);
    self->added_id = g_signal_connect (srtsrc, "caller-added",
        G_CALLBACK (on_caller_added), self);
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

  element_class->change_state = gst_srt_access_change_state;
  gst_element_class_set_static_metadata (element_class,
      "SRT listener access", "Generic",
      "Sets a sibling srtsrc's passphrase from a file descriptor and reports "
      "the callers libsrt refuses", "audio-engine");

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
}
