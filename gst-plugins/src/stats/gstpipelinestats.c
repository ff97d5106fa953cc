/* pipelinestats: reads its sibling elements' counters and posts them as one
 * element message per interval.
 *
 * Example (the element stands alone, unlinked, in the same bin):
 *   gst-launch-1.0 -m audiotestsrc is-live=true ! rtpL24pay name=pay ! \
 *       fakesink name=out \
 *       pipelinestats interval=1000000000 source=src
 *
 * The element has no pads. While PLAYING a thread of its own wakes every
 * "interval" (g_cond_wait_until on the monotonic clock, not driven by data,
 * so it reports while no SRT caller is connected and no audio flows), looks
 * its siblings up by name in its parent bin and posts one "pipelinestats"
 * element message (fields in docs/elements-pipelinestats.md):
 *
 *   source    srtsrc: its "stats" structure. In listener mode (1.22) this is
 *             { callers=<per-caller structures>, bytes-received-total } and
 *             holds no "callers" field while nobody is connected; in caller
 *             mode the per-socket fields are at the top level. Both shapes
 *             are read.
 *   sink      a buffer (and buffer list) probe on its sink pad counts packets
 *             and bytes entering it (behind rtpbatch: one list per send)
 *   payloader only used when there is no such sink: its src pad is counted
 *
 * Threading: properties under the object lock; the output counters are
 * C11 atomics written by the streaming thread's probe; the timer thread is
 * started on PAUSED->PLAYING and stopped and joined on PLAYING->PAUSED and
 * in dispose. The probe is installed on READY->PAUSED and removed on
 * PAUSED->READY.
 */
#include <gst/gst.h>

#include <stdatomic.h>
#include <string.h>

GST_DEBUG_CATEGORY_STATIC (pipeline_stats_debug);
#define GST_CAT_DEFAULT pipeline_stats_debug

#define DEFAULT_INTERVAL   GST_SECOND
#define MIN_INTERVAL       (10 * GST_MSECOND)
#define DEFAULT_SOURCE     "src"
#define DEFAULT_PAYLOADER  "pay"
#define DEFAULT_SINK       "out"

#define GST_TYPE_PIPELINE_STATS (gst_pipeline_stats_get_type ())
G_DECLARE_FINAL_TYPE (GstPipelineStats, gst_pipeline_stats, GST,
    PIPELINE_STATS, GstElement);

struct _GstPipelineStats
{
  GstElement parent;

  /* properties, under the object lock */
  guint64 interval;
  gchar *source;
  gchar *payloader;
  gchar *sink;

  /* timer thread; control fields under timer_lock */
  GMutex timer_lock;
  GCond timer_cond;
  GThread *timer_thread;
  gboolean timer_stop;

  /* output probe; set and cleared from change_state only (state lock) */
  GstPad *probe_pad;
  gulong probe_id;

  /* written by the streaming thread, read by the timer thread */
  _Atomic guint64 output_packets;
  _Atomic guint64 output_bytes;
  _Atomic gboolean output_counted;     /* a probe is installed */

  /* timer thread only (reset on READY->PAUSED, no thread running then) */
  guint64 seq;
};

enum
{
  PROP_0,
  PROP_INTERVAL,
  PROP_SOURCE,
  PROP_PAYLOADER,
  PROP_SINK
};

G_DEFINE_TYPE (GstPipelineStats, gst_pipeline_stats, GST_TYPE_ELEMENT);
GST_ELEMENT_REGISTER_DEFINE (pipelinestats, "pipelinestats", GST_RANK_NONE,
    GST_TYPE_PIPELINE_STATS);

static void gst_pipeline_stats_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec);
static void gst_pipeline_stats_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec);
static void gst_pipeline_stats_dispose (GObject * object);
static void gst_pipeline_stats_finalize (GObject * object);
static GstStateChangeReturn gst_pipeline_stats_change_state (GstElement *
    element, GstStateChange transition);

static void
gst_pipeline_stats_class_init (GstPipelineStatsClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);

  gobject_class->set_property = gst_pipeline_stats_set_property;
  gobject_class->get_property = gst_pipeline_stats_get_property;
  gobject_class->dispose = gst_pipeline_stats_dispose;
  gobject_class->finalize = gst_pipeline_stats_finalize;

  g_object_class_install_property (gobject_class, PROP_INTERVAL,
      g_param_spec_uint64 ("interval", "Interval",
          "Time between two messages while PLAYING, in nanoseconds",
          MIN_INTERVAL, G_MAXUINT64, DEFAULT_INTERVAL,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_SOURCE,
      g_param_spec_string ("source", "Source",
          "Name of the sibling srtsrc (empty: no srt-* fields)",
          DEFAULT_SOURCE, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_PAYLOADER,
      g_param_spec_string ("payloader", "Payloader",
          "Name of the sibling whose src pad output-* counts when there is "
          "no sink (read on READY->PAUSED)", DEFAULT_PAYLOADER,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_SINK,
      g_param_spec_string ("sink", "Sink",
          "Name of the sibling whose sink pad output-* counts "
          "(read on READY->PAUSED)", DEFAULT_SINK,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));

  element_class->change_state =
      GST_DEBUG_FUNCPTR (gst_pipeline_stats_change_state);

  gst_element_class_set_static_metadata (element_class,
      "Pipeline statistics", "Utility",
      "Reads its sibling elements' counters (srtsrc, sink or payloader) and "
      "posts them as one element message per interval", "audio-engine");

  GST_DEBUG_CATEGORY_INIT (pipeline_stats_debug, "pipelinestats", 0,
      "pipelinestats");
}

static void
gst_pipeline_stats_init (GstPipelineStats * self)
{
  self->interval = DEFAULT_INTERVAL;
  self->source = g_strdup (DEFAULT_SOURCE);
  self->payloader = g_strdup (DEFAULT_PAYLOADER);
  self->sink = g_strdup (DEFAULT_SINK);
  g_mutex_init (&self->timer_lock);
  g_cond_init (&self->timer_cond);
  atomic_init (&self->output_packets, 0);
  atomic_init (&self->output_bytes, 0);
  atomic_init (&self->output_counted, FALSE);
  /* no pads: never a sink, never async; the bin does not wait for it */
  GST_OBJECT_FLAG_UNSET (self, GST_ELEMENT_FLAG_SINK);
}

static void
gst_pipeline_stats_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstPipelineStats *self = GST_PIPELINE_STATS (object);
  gchar **target = NULL;

  switch (prop_id) {
    case PROP_INTERVAL:
      GST_OBJECT_LOCK (self);
      self->interval = g_value_get_uint64 (value);
      GST_OBJECT_UNLOCK (self);
      /* wake the timer so it reschedules with the new interval */
      g_mutex_lock (&self->timer_lock);
      g_cond_signal (&self->timer_cond);
      g_mutex_unlock (&self->timer_lock);
      return;
    case PROP_SOURCE:
      target = &self->source;
      break;
    case PROP_PAYLOADER:
      target = &self->payloader;
      break;
    case PROP_SINK:
      target = &self->sink;
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      return;
  }
  GST_OBJECT_LOCK (self);
  g_free (*target);
  *target = g_value_dup_string (value);
  GST_OBJECT_UNLOCK (self);
}

static void
gst_pipeline_stats_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec)
{
  GstPipelineStats *self = GST_PIPELINE_STATS (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_INTERVAL:
      g_value_set_uint64 (value, self->interval);
      break;
    case PROP_SOURCE:
      g_value_set_string (value, self->source);
      break;
    case PROP_PAYLOADER:
      g_value_set_string (value, self->payloader);
      break;
    case PROP_SINK:
      g_value_set_string (value, self->sink);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

/* --- sibling lookup --------------------------------------------------- */

/* A reffed sibling named by the string property at @name_field, or NULL
 * (empty name, no parent bin, no such element, or the element itself). */
static GstElement *
get_sibling (GstPipelineStats * self, gchar ** name_field)
{
  GstObject *parent;
  gchar *name;
  GstElement *sibling = NULL;

  GST_OBJECT_LOCK (self);
  name = g_strdup (*name_field);
  parent = GST_OBJECT_PARENT (self);
  if (parent)
    gst_object_ref (parent);
  GST_OBJECT_UNLOCK (self);

  if (parent && name && name[0] != '\0' && GST_IS_BIN (parent)) {
    sibling = gst_bin_get_by_name (GST_BIN (parent), name);
    if (sibling == GST_ELEMENT (self)) {
      gst_object_unref (sibling);
      sibling = NULL;
    }
  }
  if (parent)
    gst_object_unref (parent);
  g_free (name);
  return sibling;
}

static gboolean
has_property (gpointer object, const gchar * name, GType type)
{
  GParamSpec *pspec =
      g_object_class_find_property (G_OBJECT_GET_CLASS (object), name);

  return pspec && (pspec->flags & G_PARAM_READABLE)
      && g_type_is_a (pspec->value_type, type);
}

/* --- SRT --------------------------------------------------------------- */

/* Any integer or floating point field as a double; FALSE when absent. */
static gboolean
get_number (const GstStructure * s, const gchar * field, gdouble * out)
{
  const GValue *v = gst_structure_get_value (s, field);

  if (!v)
    return FALSE;
  switch (G_VALUE_TYPE (v)) {
    case G_TYPE_INT:
      *out = g_value_get_int (v);
      return TRUE;
    case G_TYPE_UINT:
      *out = g_value_get_uint (v);
      return TRUE;
    case G_TYPE_INT64:
      *out = (gdouble) g_value_get_int64 (v);
      return TRUE;
    case G_TYPE_UINT64:
      *out = (gdouble) g_value_get_uint64 (v);
      return TRUE;
    case G_TYPE_LONG:
      *out = (gdouble) g_value_get_long (v);
      return TRUE;
    case G_TYPE_ULONG:
      *out = (gdouble) g_value_get_ulong (v);
      return TRUE;
    case G_TYPE_DOUBLE:
      *out = g_value_get_double (v);
      return TRUE;
    case G_TYPE_FLOAT:
      *out = g_value_get_float (v);
      return TRUE;
    default:
      return FALSE;
  }
}

/* Any integer field as a guint64 (negative values clamp to 0). */
static guint64
get_count (const GstStructure * s, const gchar * field)
{
  const GValue *v = gst_structure_get_value (s, field);
  gdouble d;

  if (!v)
    return 0;
  switch (G_VALUE_TYPE (v)) {
    case G_TYPE_UINT64:
      return g_value_get_uint64 (v);
    case G_TYPE_INT64:
      return MAX (g_value_get_int64 (v), 0);
    default:
      if (get_number (s, field, &d) && d > 0)
        return (guint64) d;
      return 0;
  }
}

typedef struct
{
  gboolean connected;
  gdouble rtt_ms;
  guint64 packets_received;
  guint64 packets_lost;
  guint64 packets_retransmitted;
  guint64 packets_dropped;
  guint64 bytes_received;
  gdouble receive_rate_mbps;
  gdouble bandwidth_mbps;
  gint latency_ms;
} SrtStats;

/* Add one per-socket structure. Counters and rates add up over callers;
 * rtt, bandwidth and latency are those of the first caller. */
static void
srt_add_socket (SrtStats * st, const GstStructure * s)
{
  gdouble d;
  gboolean first = !st->connected;

  if (!s)
    return;
  st->connected = TRUE;
  st->packets_received += get_count (s, "packets-received");
  st->packets_lost += get_count (s, "packets-received-lost");
  /* receiver side; srtsrc 1.22 does not have these two (its
   * "packets-retransmitted" and "packets-sent-dropped" are SRT's sender-side
   * counters), so they stay 0 there */
  st->packets_retransmitted += get_count (s, "packets-received-retransmitted");
  st->packets_dropped += get_count (s, "packets-received-dropped");
  st->bytes_received += get_count (s, "bytes-received");
  if (get_number (s, "receive-rate-mbps", &d))
    st->receive_rate_mbps += d;
  if (first) {
    if (get_number (s, "rtt-ms", &d))
      st->rtt_ms = d;
    if (get_number (s, "bandwidth-mbps", &d))
      st->bandwidth_mbps = d;
    if (get_number (s, "negotiated-latency-ms", &d))
      st->latency_ms = (gint) d;
  }
}

static const GstStructure *
value_get_structure (const GValue * v)
{
  if (v && GST_VALUE_HOLDS_STRUCTURE (v))
    return gst_value_get_structure (v);
  return NULL;
}

/* 1.22's srtsrc puts its callers in a (deprecated) GValueArray. */
static gboolean
holds_value_array (const GValue * v)
{
  gboolean ret;

  G_GNUC_BEGIN_IGNORE_DEPRECATIONS;
  ret = G_VALUE_HOLDS (v, g_value_array_get_type ());
  G_GNUC_END_IGNORE_DEPRECATIONS;
  return ret;
}

/* Fills @st from srtsrc's "stats"; FALSE when @src has no such property. */
static gboolean
read_srt (GstElement * src, SrtStats * st)
{
  GstStructure *stats = NULL;
  const GValue *callers;

  memset (st, 0, sizeof (*st));
  if (!has_property (src, "stats", GST_TYPE_STRUCTURE))
    return FALSE;

  g_object_get (src, "stats", &stats, NULL);
  if (!stats)
    return TRUE;

  callers = gst_structure_get_value (stats, "callers");
  if (callers) {
    /* listener: one structure per connected caller */
    if (holds_value_array (callers)) {
      GValueArray *arr;
      guint i;

      G_GNUC_BEGIN_IGNORE_DEPRECATIONS;
      arr = g_value_get_boxed (callers);
      for (i = 0; arr && i < arr->n_values; i++)
        srt_add_socket (st,
            value_get_structure (g_value_array_get_nth (arr, i)));
      G_GNUC_END_IGNORE_DEPRECATIONS;
    } else if (GST_VALUE_HOLDS_ARRAY (callers)) {
      guint i, n = gst_value_array_get_size (callers);

      for (i = 0; i < n; i++)
        srt_add_socket (st,
            value_get_structure (gst_value_array_get_value (callers, i)));
    } else if (GST_VALUE_HOLDS_LIST (callers)) {
      guint i, n = gst_value_list_get_size (callers);

      for (i = 0; i < n; i++)
        srt_add_socket (st,
            value_get_structure (gst_value_list_get_value (callers, i)));
    }
  } else if (gst_structure_has_field (stats, "packets-received")) {
    /* caller mode / single socket: the fields are at the top level */
    srt_add_socket (st, stats);
  }
  /* else: listener with nobody connected (only bytes-received-total) */

  gst_structure_free (stats);
  return TRUE;
}

/* --- output probe ------------------------------------------------------ */

static gboolean
count_list_item (GstBuffer ** buf, guint idx, gpointer user_data)
{
  guint64 *bytes = user_data;

  *bytes += gst_buffer_get_size (*buf);
  return TRUE;
}

static GstPadProbeReturn
output_probe (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  GstPipelineStats *self = user_data;

  if (info->type & GST_PAD_PROBE_TYPE_BUFFER) {
    GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);

    atomic_fetch_add (&self->output_packets, 1);
    atomic_fetch_add (&self->output_bytes, gst_buffer_get_size (buf));
  } else if (info->type & GST_PAD_PROBE_TYPE_BUFFER_LIST) {
    GstBufferList *list = GST_PAD_PROBE_INFO_BUFFER_LIST (info);
    guint64 bytes = 0;

    gst_buffer_list_foreach (list, count_list_item, &bytes);
    atomic_fetch_add (&self->output_packets, gst_buffer_list_length (list));
    atomic_fetch_add (&self->output_bytes, bytes);
  }
  return GST_PAD_PROBE_OK;
}

static void
install_probe (GstPipelineStats * self)
{
  GstElement *el;
  GstPad *pad = NULL;

  /* the sink's pad first: behind rtpbatch it sees one list per send, where
   * the payloader's pad sees every packet on its own */
  el = get_sibling (self, &self->sink);
  if (el) {
    pad = gst_element_get_static_pad (el, "sink");
    gst_object_unref (el);
  }
  if (!pad) {
    el = get_sibling (self, &self->payloader);
    if (el) {
      pad = gst_element_get_static_pad (el, "src");
      gst_object_unref (el);
    }
  }
  if (!pad) {
    GST_INFO_OBJECT (self, "no sink sink pad or payloader src pad: "
        "no output-* fields");
    return;
  }
  self->probe_id = gst_pad_add_probe (pad,
      GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_BUFFER_LIST,
      output_probe, self, NULL);
  self->probe_pad = pad;
  atomic_store (&self->output_counted, TRUE);
  GST_DEBUG_OBJECT (self, "counting output on %" GST_PTR_FORMAT, pad);
}

static void
remove_probe (GstPipelineStats * self)
{
  atomic_store (&self->output_counted, FALSE);
  if (self->probe_pad) {
    gst_pad_remove_probe (self->probe_pad, self->probe_id);
    gst_object_unref (self->probe_pad);
    self->probe_pad = NULL;
    self->probe_id = 0;
  }
}

/* --- one message ------------------------------------------------------- */

static void
post_stats (GstPipelineStats * self)
{
  GstStructure *s;
  GstElement *el;
  GstClockTime running_time;

  s = gst_structure_new_empty ("pipelinestats");
  gst_structure_set (s, "seq", G_TYPE_UINT64, self->seq++, NULL);

  running_time = gst_element_get_current_running_time (GST_ELEMENT (self));
  if (GST_CLOCK_TIME_IS_VALID (running_time))
    gst_structure_set (s, "running-time", G_TYPE_UINT64, running_time, NULL);

  el = get_sibling (self, &self->source);
  if (el) {
    SrtStats st;

    if (read_srt (el, &st)) {
      gst_structure_set (s,
          "srt-connected", G_TYPE_BOOLEAN, st.connected,
          "srt-rtt-ms", G_TYPE_DOUBLE, st.rtt_ms,
          "srt-packets-received", G_TYPE_UINT64, st.packets_received,
          "srt-packets-lost", G_TYPE_UINT64, st.packets_lost,
          "srt-packets-retransmitted", G_TYPE_UINT64,
          st.packets_retransmitted,
          "srt-packets-dropped", G_TYPE_UINT64, st.packets_dropped,
          "srt-bytes-received", G_TYPE_UINT64, st.bytes_received,
          "srt-receive-rate-mbps", G_TYPE_DOUBLE, st.receive_rate_mbps,
          "srt-bandwidth-mbps", G_TYPE_DOUBLE, st.bandwidth_mbps,
          "srt-latency-ms", G_TYPE_INT, st.latency_ms, NULL);
    }
    gst_object_unref (el);
  }

  if (atomic_load (&self->output_counted)) {
    gst_structure_set (s,
        "output-packets", G_TYPE_UINT64, atomic_load (&self->output_packets),
        "output-bytes", G_TYPE_UINT64, atomic_load (&self->output_bytes),
        NULL);
  }

  gst_element_post_message (GST_ELEMENT (self),
      gst_message_new_element (GST_OBJECT (self), s));
}

/* --- timer thread ------------------------------------------------------ */

static gpointer
timer_thread_func (gpointer data)
{
  GstPipelineStats *self = data;
  gint64 next;
  guint64 interval;

  GST_OBJECT_LOCK (self);
  interval = self->interval;
  GST_OBJECT_UNLOCK (self);
  next = g_get_monotonic_time () + (gint64) (interval / GST_USECOND);

  g_mutex_lock (&self->timer_lock);
  while (!self->timer_stop) {
    guint64 now_interval;

    if (g_cond_wait_until (&self->timer_cond, &self->timer_lock, next)) {
      /* woken: stop, interval change or spurious */
      if (self->timer_stop)
        break;
      GST_OBJECT_LOCK (self);
      now_interval = self->interval;
      GST_OBJECT_UNLOCK (self);
      if (now_interval != interval) {
        interval = now_interval;
        next = g_get_monotonic_time () + (gint64) (interval / GST_USECOND);
      }
      continue;
    }
    if (g_get_monotonic_time () < next)
      continue;

    g_mutex_unlock (&self->timer_lock);
    post_stats (self);
    GST_OBJECT_LOCK (self);
    interval = self->interval;
    GST_OBJECT_UNLOCK (self);
    g_mutex_lock (&self->timer_lock);

    /* fixed schedule, no drift; skip ticks missed (e.g. a stalled bus) */
    next += (gint64) (interval / GST_USECOND);
    if (next <= g_get_monotonic_time ())
      next = g_get_monotonic_time () + (gint64) (interval / GST_USECOND);
  }
  g_mutex_unlock (&self->timer_lock);
  return NULL;
}

static gboolean
start_timer (GstPipelineStats * self)
{
  GError *err = NULL;

  g_mutex_lock (&self->timer_lock);
  if (self->timer_thread) {
    g_mutex_unlock (&self->timer_lock);
    return TRUE;
  }
  self->timer_stop = FALSE;
  self->timer_thread = g_thread_try_new ("pipelinestats", timer_thread_func,
      self, &err);
  g_mutex_unlock (&self->timer_lock);
  if (!self->timer_thread) {
    GST_ELEMENT_ERROR (self, RESOURCE, FAILED,
        ("Could not start the statistics thread"), ("%s", err->message));
    g_clear_error (&err);
    return FALSE;
  }
  return TRUE;
}

static void
stop_timer (GstPipelineStats * self)
{
  GThread *thread;

  g_mutex_lock (&self->timer_lock);
  thread = self->timer_thread;
  self->timer_thread = NULL;
  self->timer_stop = TRUE;
  g_cond_broadcast (&self->timer_cond);
  g_mutex_unlock (&self->timer_lock);
  if (thread)
    g_thread_join (thread);
}

/* --- state ------------------------------------------------------------- */

static GstStateChangeReturn
gst_pipeline_stats_change_state (GstElement * element,
    GstStateChange transition)
{
  GstPipelineStats *self = GST_PIPELINE_STATS (element);
  GstStateChangeReturn ret;

  switch (transition) {
    case GST_STATE_CHANGE_READY_TO_PAUSED:
      atomic_store (&self->output_packets, 0);
      atomic_store (&self->output_bytes, 0);
      self->seq = 0;
      install_probe (self);
      break;
    case GST_STATE_CHANGE_PAUSED_TO_PLAYING:
      if (!start_timer (self))
        return GST_STATE_CHANGE_FAILURE;
      break;
    case GST_STATE_CHANGE_PLAYING_TO_PAUSED:
      stop_timer (self);
      break;
    default:
      break;
  }

  ret = GST_ELEMENT_CLASS (gst_pipeline_stats_parent_class)->change_state
      (element, transition);
  if (ret == GST_STATE_CHANGE_FAILURE) {
    if (transition == GST_STATE_CHANGE_PAUSED_TO_PLAYING)
      stop_timer (self);
    else if (transition == GST_STATE_CHANGE_READY_TO_PAUSED)
      remove_probe (self);
    return ret;
  }

  switch (transition) {
    case GST_STATE_CHANGE_PAUSED_TO_READY:
      remove_probe (self);
      break;
    default:
      break;
  }
  return ret;
}

static void
gst_pipeline_stats_dispose (GObject * object)
{
  GstPipelineStats *self = GST_PIPELINE_STATS (object);

  stop_timer (self);
  remove_probe (self);
  G_OBJECT_CLASS (gst_pipeline_stats_parent_class)->dispose (object);
}

static void
gst_pipeline_stats_finalize (GObject * object)
{
  GstPipelineStats *self = GST_PIPELINE_STATS (object);

  g_free (self->source);
  g_free (self->payloader);
  g_free (self->sink);
  g_mutex_clear (&self->timer_lock);
  g_cond_clear (&self->timer_cond);
  G_OBJECT_CLASS (gst_pipeline_stats_parent_class)->finalize (object);
}
