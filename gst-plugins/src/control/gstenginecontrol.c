/* enginecontrol: the engine's control channel into a running gst-launch-1.0
 * child. It reads commands from a descriptor the engine holds open for the
 * child's whole life, sets properties of sibling elements named in them and
 * posts one acknowledgement element message per command.
 *
 * Example (the element stands alone, unlinked, in the same bin):
 *   gst-launch-1.0 -m audiotestsrc is-live=true ! parametriceq name=step0 \
 *       bands=1000:0 ! fakesink   enginecontrol fd=4
 *
 * Command format, version 1 (docs/elements-enginecontrol.md), one per line:
 *
 *   v1 <id> set <element>.<property>=<value> [<element>.<property>=<value>]...
 *
 *   id        [1-9][0-9]{0,15}
 *   element   [a-z][a-z0-9_]{0,31}      a sibling in the same bin
 *   property  [a-z][a-z0-9-]{0,63}      a property of that element
 *   value     [-+.,:0-9a-z]{1,1024}     parsed with the property's own type
 *                                       (numbers, true/false, an enum's nick)
 *
 * A line is at most 4096 bytes; at most 32 assignments. Anything else is
 * refused with an error acknowledgement. Every assignment of a command is
 * checked first (element found, property exists, writable, not construct-
 * only, mutable in the element's current state, the value parses for the
 * property's GType and is within its GParamSpec's range); only then are they
 * all set, so a command is applied entirely or not at all.
 *
 * Acknowledgement: an element message "enginecontrol" with version=(int)1,
 * id=(guint64) (0 when the line was too malformed to read one), ok=(boolean)
 * and, when refused, error=(string). The error text is built from fixed words
 * and tokens that already matched the grammar above, never from raw input.
 *
 * Threading: a reader thread of its own (poll on the descriptor and on a
 * wake-up pipe) is started on NULL->READY and stopped and joined on
 * READY->NULL and in dispose. It sets the properties itself: the elements
 * take their own locks in set_property (loudnorm and parametriceq read new
 * values once per buffer and ramp them). The descriptor is not closed: the
 * process owns it.
 */
#include <gst/gst.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

GST_DEBUG_CATEGORY_STATIC (engine_control_debug);
#define GST_CAT_DEFAULT engine_control_debug

#define MAX_LINE        4096
#define MAX_ASSIGNMENTS 32
#define MAX_VALUE       1024
#define PROTOCOL        1

#define GST_TYPE_ENGINE_CONTROL (gst_engine_control_get_type ())
G_DECLARE_FINAL_TYPE (GstEngineControl, gst_engine_control, GST,
    ENGINE_CONTROL, GstElement);

struct _GstEngineControl
{
  GstElement parent;

  /* property, under the object lock */
  gint fd;

  /* reader thread; started and stopped from change_state and dispose */
  GThread *thread;
  gint wake[2];
};

enum
{
  PROP_0,
  PROP_FD
};

G_DEFINE_TYPE (GstEngineControl, gst_engine_control, GST_TYPE_ELEMENT);
GST_ELEMENT_REGISTER_DEFINE (enginecontrol, "enginecontrol", GST_RANK_NONE,
    GST_TYPE_ENGINE_CONTROL);

typedef struct
{
  GstElement *target;
  GParamSpec *pspec;
  GValue value;
} Assignment;

/* ---- acknowledgements ------------------------------------------------ */

static void
post_ack (GstEngineControl * self, guint64 id, const gchar * error)
{
  GstStructure *s = gst_structure_new ("enginecontrol",
      "version", G_TYPE_INT, PROTOCOL,
      "id", G_TYPE_UINT64, id,
      "ok", G_TYPE_BOOLEAN, error == NULL, NULL);

  if (error != NULL)
    gst_structure_set (s, "error", G_TYPE_STRING, error, NULL);
  GST_DEBUG_OBJECT (self, "ack %" G_GUINT64_FORMAT ": %s", id,
      error ? error : "ok");
  gst_element_post_message (GST_ELEMENT (self),
      gst_message_new_element (GST_OBJECT (self), s));
}

/* ---- the grammar ------------------------------------------------------- */

static gboolean
is_lower_or_digit (gchar c)
{
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* [a-z][a-z0-9_]{0,31} */
static gboolean
valid_element_name (const gchar * s, gsize len)
{
  if (len < 1 || len > 32 || !(s[0] >= 'a' && s[0] <= 'z'))
    return FALSE;
  for (gsize i = 1; i < len; i++)
    if (!is_lower_or_digit (s[i]) && s[i] != '_')
      return FALSE;
  return TRUE;
}

/* [a-z][a-z0-9-]{0,63} */
static gboolean
valid_property_name (const gchar * s, gsize len)
{
  if (len < 1 || len > 64 || !(s[0] >= 'a' && s[0] <= 'z'))
    return FALSE;
  for (gsize i = 1; i < len; i++)
    if (!is_lower_or_digit (s[i]) && s[i] != '-')
      return FALSE;
  return TRUE;
}

/* [-+.,:0-9a-z]{1,1024} */
static gboolean
valid_value (const gchar * s, gsize len)
{
  if (len < 1 || len > MAX_VALUE)
    return FALSE;
  for (gsize i = 0; i < len; i++)
    if (!is_lower_or_digit (s[i]) && strchr ("-+.,:", s[i]) == NULL)
      return FALSE;
  return TRUE;
}

/* [1-9][0-9]{0,15} */
static gboolean
parse_id (const gchar * s, guint64 * id)
{
  gsize len = strlen (s);

  if (len < 1 || len > 16 || s[0] < '1' || s[0] > '9')
    return FALSE;
  for (gsize i = 1; i < len; i++)
    if (s[i] < '0' || s[i] > '9')
      return FALSE;
  *id = g_ascii_strtoull (s, NULL, 10);
  return TRUE;
}

/* ---- values by the property's own type --------------------------------- */

/* Fills v (initialised to the pspec's type) from text; FALSE when the text is
 * not a value of that type. The range is checked afterwards by the pspec. */
static gboolean
parse_value (GParamSpec * pspec, const gchar * text, GValue * v)
{
  GType type = G_PARAM_SPEC_VALUE_TYPE (pspec);
  gchar *end = NULL;

  g_value_init (v, type);
  switch (G_TYPE_FUNDAMENTAL (type)) {
    case G_TYPE_DOUBLE:
    case G_TYPE_FLOAT:{
      gdouble d;
      errno = 0;
      d = g_ascii_strtod (text, &end);
      if (end == text || *end != '\0' || errno != 0 || !isfinite (d))
        return FALSE;
      /* the digits only: no "inf", "nan" or hex forms */
      for (const gchar * p = text; *p; p++)
        if (!(g_ascii_isdigit (*p) || *p == '.' || *p == '-' || *p == '+'))
          return FALSE;
      if (type == G_TYPE_FLOAT) {
        if (d > G_MAXFLOAT || d < -G_MAXFLOAT)
          return FALSE;
        g_value_set_float (v, (gfloat) d);
      } else {
        g_value_set_double (v, d);
      }
      return TRUE;
    }
    case G_TYPE_INT:
    case G_TYPE_INT64:{
      gint64 i;
      if (!g_ascii_string_to_signed (text, 10, G_MININT64, G_MAXINT64, &i,
              NULL))
        return FALSE;
      if (type == G_TYPE_INT) {
        if (i < G_MININT || i > G_MAXINT)
          return FALSE;
        g_value_set_int (v, (gint) i);
      } else {
        g_value_set_int64 (v, i);
      }
      return TRUE;
    }
    case G_TYPE_UINT:
    case G_TYPE_UINT64:{
      guint64 u;
      if (!g_ascii_string_to_unsigned (text, 10, 0, G_MAXUINT64, &u, NULL))
        return FALSE;
      if (type == G_TYPE_UINT) {
        if (u > G_MAXUINT)
          return FALSE;
        g_value_set_uint (v, (guint) u);
      } else {
        g_value_set_uint64 (v, u);
      }
      return TRUE;
    }
    case G_TYPE_BOOLEAN:
      if (strcmp (text, "true") == 0)
        g_value_set_boolean (v, TRUE);
      else if (strcmp (text, "false") == 0)
        g_value_set_boolean (v, FALSE);
      else
        return FALSE;
      return TRUE;
    case G_TYPE_ENUM:{
      /* by nick only (clockbridge's select=backup), not name or number */
      GEnumClass *klass = g_type_class_ref (type);
      GEnumValue *e = g_enum_get_value_by_nick (klass, text);
      if (e != NULL)
        g_value_set_enum (v, e->value);
      g_type_class_unref (klass);
      return e != NULL;
    }
    case G_TYPE_STRING:
      /* already restricted to the value alphabet; the element parses it */
      g_value_set_string (v, text);
      return TRUE;
    default:
      return FALSE;
  }
}

/* udpsink's destination (`host`, `port`) is not flagged mutable, but
 * udpsink applies a new one while playing by design: it removes the old
 * client and adds the new one (joining a multicast group) under
 * multiudpsink's client lock, as applications that retarget a stream do. */
static gboolean
is_live_destination (GstElement * target, GParamSpec * pspec)
{
  return g_strcmp0 (G_OBJECT_TYPE_NAME (target), "GstUDPSink") == 0
      && (g_strcmp0 (pspec->name, "host") == 0
      || g_strcmp0 (pspec->name, "port") == 0);
}

/* The property may be set in the element's current state: writable, not
 * construct-only, and in PAUSED or PLAYING flagged as mutable there (or
 * udpsink's destination, above). */
static const gchar *
check_mutable (GstElement * target, GParamSpec * pspec)
{
  GstState state;

  if (!(pspec->flags & G_PARAM_WRITABLE))
    return "is not writable";
  if (pspec->flags & G_PARAM_CONSTRUCT_ONLY)
    return "can only be set at construction";
  if (is_live_destination (target, pspec))
    return NULL;
  GST_OBJECT_LOCK (target);
  state = GST_STATE (target);
  GST_OBJECT_UNLOCK (target);
  if (state == GST_STATE_PLAYING && !(pspec->flags & GST_PARAM_MUTABLE_PLAYING))
    return "cannot be changed while playing";
  if (state == GST_STATE_PAUSED && !(pspec->flags & (GST_PARAM_MUTABLE_PLAYING
              | GST_PARAM_MUTABLE_PAUSED)))
    return "cannot be changed while paused";
  return NULL;
}

/* ---- one command ------------------------------------------------------- */

static void
clear_assignments (Assignment * a, guint n)
{
  for (guint i = 0; i < n; i++) {
    if (G_IS_VALUE (&a[i].value))
      g_value_unset (&a[i].value);
    if (a[i].target != NULL)
      gst_object_unref (a[i].target);
  }
}

/* Checks one "<element>.<property>=<value>" token into *a; NULL or the
 * reason (in err). */
static gboolean
check_assignment (GstEngineControl * self, GstBin * bin, const gchar * token,
    Assignment * a, GString * err)
{
  const gchar *dot = strchr (token, '.');
  const gchar *eq = dot != NULL ? strchr (dot, '=') : NULL;
  gchar *element_name, *property_name;
  const gchar *value, *why;
  gboolean ok = FALSE;

  if (dot == NULL || eq == NULL
      || !valid_element_name (token, (gsize) (dot - token))
      || !valid_property_name (dot + 1, (gsize) (eq - dot - 1))
      || !valid_value (eq + 1, strlen (eq + 1))) {
    g_string_assign (err, "malformed assignment");
    return FALSE;
  }
  element_name = g_strndup (token, (gsize) (dot - token));
  property_name = g_strndup (dot + 1, (gsize) (eq - dot - 1));
  value = eq + 1;

  a->target = bin != NULL ? gst_bin_get_by_name (bin, element_name) : NULL;
  if (a->target == NULL || a->target == GST_ELEMENT (self)) {
    g_string_printf (err, "no element %s", element_name);
    goto out;
  }
  a->pspec = g_object_class_find_property (G_OBJECT_GET_CLASS (a->target),
      property_name);
  if (a->pspec == NULL) {
    g_string_printf (err, "%s has no property %s", element_name,
        property_name);
    goto out;
  }
  why = check_mutable (a->target, a->pspec);
  if (why != NULL) {
    g_string_printf (err, "%s.%s %s", element_name, property_name, why);
    goto out;
  }
  if (!parse_value (a->pspec, value, &a->value)) {
    g_string_printf (err, "%s.%s: %s is not a %s", element_name,
        property_name, value, g_type_name (a->pspec->value_type));
    goto out;
  }
  /* TRUE: the value had to be changed to fit the pspec (out of range) */
  if (g_param_value_validate (a->pspec, &a->value)) {
    g_string_printf (err, "%s.%s: %s is out of range", element_name,
        property_name, value);
    goto out;
  }
  ok = TRUE;
out:
  g_free (element_name);
  g_free (property_name);
  return ok;
}

static void
handle_line (GstEngineControl * self, const gchar * line)
{
  gchar **tokens = g_strsplit (line, " ", -1);
  guint n_tokens = g_strv_length (tokens);
  guint64 id = 0;
  Assignment assignments[MAX_ASSIGNMENTS];
  guint n = 0;
  GString *err = g_string_new (NULL);
  GstObject *parent = NULL;

  memset (assignments, 0, sizeof assignments);
  if (n_tokens < 2 || !parse_id (tokens[1], &id)) {
    id = 0;
    g_string_assign (err, "malformed command: no request id");
    goto done;
  }
  if (strcmp (tokens[0], "v1") != 0) {
    g_string_assign (err, "unknown protocol version (this element speaks v1)");
    goto done;
  }
  if (n_tokens < 4 || strcmp (tokens[2], "set") != 0) {
    g_string_assign (err, "malformed command: expected set and assignments");
    goto done;
  }
  if (n_tokens - 3 > MAX_ASSIGNMENTS) {
    g_string_printf (err, "too many assignments (at most %d)",
        MAX_ASSIGNMENTS);
    goto done;
  }
  parent = gst_object_get_parent (GST_OBJECT (self));
  for (guint i = 3; i < n_tokens; i++) {
    if (!check_assignment (self, GST_IS_BIN (parent) ? GST_BIN (parent) : NULL,
            tokens[i], &assignments[n], err)) {
      n++;
      goto done;
    }
    n++;
  }
  for (guint i = 0; i < n; i++)
    g_object_set_property (G_OBJECT (assignments[i].target),
        assignments[i].pspec->name, &assignments[i].value);
  g_string_truncate (err, 0);

done:
  post_ack (self, id, err->len > 0 ? err->str : NULL);
  clear_assignments (assignments, n);
  if (parent != NULL)
    gst_object_unref (parent);
  g_string_free (err, TRUE);
  g_strfreev (tokens);
}

/* ---- the reader thread ------------------------------------------------- */

static gpointer
reader_thread (gpointer data)
{
  GstEngineControl *self = data;
  gint fd;
  gchar chunk[1024];
  GString *line = g_string_sized_new (256);
  gboolean overlong = FALSE;

  GST_OBJECT_LOCK (self);
  fd = self->fd;
  GST_OBJECT_UNLOCK (self);

  for (;;) {
    struct pollfd fds[2] = {
      {.fd = fd,.events = POLLIN},
      {.fd = self->wake[0],.events = POLLIN},
    };
    ssize_t got;

    if (poll (fds, 2, -1) < 0) {
      if (errno == EINTR)
        continue;
      GST_ERROR_OBJECT (self, "poll: %s", g_strerror (errno));
      break;
    }
    if (fds[1].revents != 0)
      break;
    got = read (fd, chunk, sizeof chunk);
    if (got < 0 && (errno == EINTR || errno == EAGAIN))
      continue;
    if (got <= 0) {
      GST_INFO_OBJECT (self, "control descriptor %d closed", fd);
      break;
    }
    for (ssize_t i = 0; i < got; i++) {
      gchar c = chunk[i];
      if (c == '\n') {
        if (overlong)
          post_ack (self, 0, "malformed command: line too long");
        else if (memchr (line->str, '\0', line->len) != NULL)
          post_ack (self, 0, "malformed command: NUL byte");
        else
          handle_line (self, line->str);
        g_string_truncate (line, 0);
        overlong = FALSE;
      } else if (!overlong) {
        if (line->len >= MAX_LINE) {
          overlong = TRUE;
          g_string_truncate (line, 0);
        } else {
          g_string_append_c (line, c);
        }
      }
    }
  }
  g_string_free (line, TRUE);
  return NULL;
}

static gboolean
start_reader (GstEngineControl * self)
{
  gint fd;

  GST_OBJECT_LOCK (self);
  fd = self->fd;
  GST_OBJECT_UNLOCK (self);
  if (fd < 0 || self->thread != NULL)
    return TRUE;
  if (fcntl (fd, F_GETFD) < 0) {
    GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ, (NULL),
        ("control descriptor %d is not open", fd));
    return FALSE;
  }
  if (pipe (self->wake) != 0) {
    GST_ELEMENT_ERROR (self, RESOURCE, FAILED, (NULL),
        ("pipe: %s", g_strerror (errno)));
    return FALSE;
  }
  self->thread = g_thread_new ("enginecontrol", reader_thread, self);
  return TRUE;
}

static void
stop_reader (GstEngineControl * self)
{
  if (self->thread == NULL)
    return;
  while (write (self->wake[1], "x", 1) < 0 && errno == EINTR);
  g_thread_join (self->thread);
  self->thread = NULL;
  close (self->wake[0]);
  close (self->wake[1]);
  self->wake[0] = self->wake[1] = -1;
}

/* ---- GObject / GstElement ---------------------------------------------- */

static GstStateChangeReturn
gst_engine_control_change_state (GstElement * element,
    GstStateChange transition)
{
  GstEngineControl *self = GST_ENGINE_CONTROL (element);
  GstStateChangeReturn ret;

  if (transition == GST_STATE_CHANGE_NULL_TO_READY && !start_reader (self))
    return GST_STATE_CHANGE_FAILURE;
  ret = GST_ELEMENT_CLASS (gst_engine_control_parent_class)->change_state
      (element, transition);
  if (transition == GST_STATE_CHANGE_READY_TO_NULL
      || (transition == GST_STATE_CHANGE_NULL_TO_READY
          && ret == GST_STATE_CHANGE_FAILURE))
    stop_reader (self);
  return ret;
}

static void
gst_engine_control_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstEngineControl *self = GST_ENGINE_CONTROL (object);

  switch (prop_id) {
    case PROP_FD:
      GST_OBJECT_LOCK (self);
      self->fd = g_value_get_int (value);
      GST_OBJECT_UNLOCK (self);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
}

static void
gst_engine_control_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec)
{
  GstEngineControl *self = GST_ENGINE_CONTROL (object);

  switch (prop_id) {
    case PROP_FD:
      GST_OBJECT_LOCK (self);
      g_value_set_int (value, self->fd);
      GST_OBJECT_UNLOCK (self);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
}

static void
gst_engine_control_dispose (GObject * object)
{
  stop_reader (GST_ENGINE_CONTROL (object));
  G_OBJECT_CLASS (gst_engine_control_parent_class)->dispose (object);
}

static void
gst_engine_control_class_init (GstEngineControlClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);

  GST_DEBUG_CATEGORY_INIT (engine_control_debug, "enginecontrol", 0,
      "engine control channel");

  gobject_class->set_property = gst_engine_control_set_property;
  gobject_class->get_property = gst_engine_control_get_property;
  gobject_class->dispose = gst_engine_control_dispose;

  g_object_class_install_property (gobject_class, PROP_FD,
      g_param_spec_int ("fd", "Descriptor",
          "Descriptor the commands are read from (-1: none)", -1, 1024, -1,
          G_PARAM_READWRITE | GST_PARAM_MUTABLE_READY |
          G_PARAM_STATIC_STRINGS));

  element_class->change_state = gst_engine_control_change_state;
  gst_element_class_set_static_metadata (element_class,
      "Engine control channel", "Generic",
      "Reads versioned property commands from a descriptor, sets them on "
      "sibling elements and acknowledges each with an element message",
      "Audio Pipeline Engine");
}

static void
gst_engine_control_init (GstEngineControl * self)
{
  self->fd = -1;
  self->wake[0] = self->wake[1] = -1;
  /* pad-less: not a sink, so the bin's EOS does not wait for it */
  GST_OBJECT_FLAG_UNSET (self, GST_ELEMENT_FLAG_SINK);
}
