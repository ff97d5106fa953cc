/* clockbridge: crosses from the sender's clock to the pipeline clock.
 *
 *   ... ! audio/x-raw,format=F32LE,layout=interleaved,rate=48000,channels=2 \
 *       ! clockbridge name=bridge jitter=20000000 meter-interval=100000000 ! ...
 *
 * The sink pad takes buffers when they arrive (their timestamps, segment and
 * caps stay upstream) and writes them into the DSP core (bridge.c: FIFO,
 * windowed-sinc resampler, control loop).  A task on the src pad is a live
 * source on the pipeline clock: it waits until the end of each `chunk`
 * (running time), reads exactly chunk x 48 frames per ms from the core and
 * pushes them, PTS = the running time at which PLAYING started + frames
 * pushed / 48000, DURATION set.  So the output carries 48000 frames per
 * second of the pipeline clock whatever the sender does; with no input it
 * carries digital silence.
 *
 * Failover (failover.h): a request sink pad `backup` (at most one) has a
 * core of its own, written by its own streaming thread; the task reads
 * both cores every chunk (the backup is hot) and a `fallback-file` (raw
 * F32LE, mapped at READY->PAUSED, looped), and the policy in failover.c
 * mixes the chunk it pushes: the input on air, a 10 ms crossfade at each
 * switch (a `failover` message), another input covering while the one on
 * air has no audio.  Without a backup pad and a fallback file the main
 * core reads straight into the buffer as before; the policy only measures
 * (the periodic message's failover fields).  The failover-* properties and
 * `select` may change while PLAYING: the task reads them every chunk.
 *
 * Clock: the element provides the pipeline clock (GST_ELEMENT_FLAG_PROVIDE_CLOCK):
 * a GstSystemClock of clock-type TAI or REALTIME, or for `/dev/ptpN` a
 * monotonic GstSystemClock slaved to a clock that reads the PTP hardware
 * clock (phcclock.c).  It runs on whatever clock the pipeline selects.
 *
 * Meter: with meter-interval set, a `level` message per interval of output,
 * the RMS and peak per channel as GStreamer's level element after the bridge
 * posted them (meter.c), so the graph needs no level element.
 *
 * Latency: answers the LATENCY query as a live source with chunk +
 * LATENCY_MARGIN and does not ask upstream (the clock boundary: upstream's
 * latency is absorbed by the FIFO, whose fill is the `jitter` target).
 *
 * Events: upstream's STREAM_START, CAPS, SEGMENT, TAG and GAP stop here;
 * the task sends its own.  EOS on the sink pad: the FIFO plays out, then
 * the task pushes EOS.  FLUSH_START/STOP on the sink pad empty the FIFO
 * (not forwarded: downstream runs on the task).  Upstream SEEK is refused.
 *
 * Threading: the core, the flags and the clock id are under self->lock;
 * properties under the object lock (self->lock is taken first where both
 * are held).  The stream fields marked "task" are touched only by the task
 * and by state changes while the task is stopped.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "bridge.h"
#include "failover.h"
#include "meter.h"
#include "phcclock.h"
#include "rtguard.h"

#include <gst/audio/audio.h>
#include <gst/gst.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>
#include <errno.h>
#include <time.h>

GST_DEBUG_CATEGORY_STATIC (clock_bridge_debug);
#define GST_CAT_DEFAULT clock_bridge_debug

#define RATE 48000
#define MAX_CHANNELS 8
/* time the graph after the bridge has to process a chunk and the sink to
 * send it before it is due: the whole processing margin of the graph (the
 * compiler sets the sink's own processing-deadline to 0) */
#define LATENCY_MARGIN (1 * GST_MSECOND)
/* the output thread's SCHED_FIFO priority, when the process may have it */
#define OUTPUT_RT_PRIORITY 10
/* the input thread's, below the output's */
#define INPUT_RT_PRIORITY 5
/* a real-time thread that runs this long without blocking (both threads
 * block every few ms) gets RLIMIT_RTTIME's SIGXCPU: the guard (rtguard.c)
 * then moves it to SCHED_OTHER instead of the signal ending the process, so
 * it cannot starve the host; it asks for real time again once it has
 * blocked */
#define RT_CPU_LIMIT_US 200000
/* input-active: a buffer arrived within this time */
#define INPUT_ACTIVE_WINDOW (200 * GST_MSECOND)
/* the longest wait the output task sleeps directly on the kernel clock
 * (wait_until_due): a stop or pause waits for it */
#define DIRECT_SLEEP_MAX (50 * GST_MSECOND)

#define DEFAULT_CLOCK_SOURCE "tai"
#define DEFAULT_JITTER (20 * GST_MSECOND)
#define MIN_JITTER (5 * GST_MSECOND)
#define MAX_JITTER (500 * GST_MSECOND)
/* jitter-max: 0 (jitter + CLOCK_BRIDGE_MAX_DEPTH_S) or a ceiling up to */
#define MAX_JITTER_MAX (2500 * GST_MSECOND)
#define DEFAULT_CHUNK (4 * GST_MSECOND)
#define MIN_CHUNK (1 * GST_MSECOND)
#define MAX_CHUNK (20 * GST_MSECOND)
#define DEFAULT_INTERVAL (GST_SECOND)
#define MIN_INTERVAL (10 * GST_MSECOND)
/* meter-interval: 0 (no level messages) or at least this */
#define MIN_METER_INTERVAL (10 * GST_MSECOND)
#define DEFAULT_CHANNELS 2
#define DEFAULT_FAILOVER_LOSS (300 * GST_MSECOND)
#define MIN_FAILOVER_LOSS (50 * GST_MSECOND)
#define MAX_FAILOVER_LOSS (10 * GST_SECOND)
#define DEFAULT_SILENCE_LEVEL -50.0
#define DEFAULT_FAILOVER_SILENCE (10 * GST_SECOND)
#define MIN_FAILOVER_SILENCE (1 * GST_SECOND)
#define MAX_FAILOVER_SILENCE (600 * GST_SECOND)
#define DEFAULT_FAILOVER_RETURN (10 * GST_SECOND)
#define MAX_FAILOVER_RETURN (600 * GST_SECOND)
/* the fallback file: at least this much audio (a shorter loop is a buzz) */
#define MIN_FALLBACK_FRAMES (RATE / 10)

#define TEMPLATE_CAPS \
  "audio/x-raw, format = (string) F32LE, layout = (string) interleaved, " \
  "rate = (int) 48000, channels = (int) [ 1, 8 ]"

enum
{
  PROP_0,
  PROP_CLOCK_SOURCE,
  PROP_JITTER,
  PROP_JITTER_MAX,
  PROP_CHUNK,
  PROP_INTERVAL,
  PROP_METER_INTERVAL,
  PROP_CHANNELS,
  PROP_PACE_INPUT,
  PROP_FALLBACK_FILE,
  PROP_FAILOVER_LOSS,
  PROP_FAILOVER_SILENCE_LEVEL,
  PROP_FAILOVER_SILENCE,
  PROP_FAILOVER_RETURN,
  PROP_FALLBACK_ON_SILENCE,
  PROP_SELECT,
};

/* select: the input forced on air, or auto (failover.h's FailoverSelect) */
#define GST_TYPE_CLOCK_BRIDGE_SELECT (gst_clock_bridge_select_get_type ())
static GType
gst_clock_bridge_select_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {FAILOVER_SELECT_AUTO, "The failover policy decides", "auto"},
    {FAILOVER_SELECT_MAIN, "The main input (sink pad)", "main"},
    {FAILOVER_SELECT_BACKUP, "The backup input (backup pad)", "backup"},
    {FAILOVER_SELECT_FALLBACK, "The fallback file", "fallback"},
    {0, NULL, NULL}
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstClockBridgeSelect", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

#define GST_TYPE_CLOCK_BRIDGE (gst_clock_bridge_get_type ())
G_DECLARE_FINAL_TYPE (GstClockBridge, gst_clock_bridge, GST, CLOCK_BRIDGE,
    GstElement);

struct _GstClockBridge
{
  GstElement parent;

  GstPad *sinkpad;
  GstPad *srcpad;

  /* properties, under the object lock */
  gchar *clock_source;
  guint64 jitter, jitter_max, chunk, interval, meter_interval;
  gint channels;
  gboolean pace_input;
  gchar *fallback_file;
  FailoverSettings failover_set;
  gchar *settings_error;        /* the first refused value, reported at READY */

  /* the clock we provide, under the object lock; made at NULL->READY */
  GstClock *clock;

  /* under self->lock */
  GMutex lock;
  GCond cond;
  ClockBridge *bridge;
  gboolean paced;               /* pace-input as the bridge was made with it */
  gboolean playing;             /* PLAYING: the task may run */
  gboolean task_stop;           /* the src pad is deactivating */
  gboolean sink_flushing;
  gboolean eos_in;              /* EOS arrived on the sink pad */
  GstClockID clock_id;          /* the task's wait */
  /* the kernel clock of the clock we provide (CLOCK_TAI, CLOCK_REALTIME),
   * -1 for a /dev/ptpN clock; set with self->clock */
  clockid_t sleep_clock;
  GstClockTime last_input;      /* pipeline clock time of the last input */
  GstFlowReturn src_flow;       /* last push result, returned upstream */
  /* the pipeline's latency (the sinks' LATENCY event): a chunk is read
   * when the sink is due to send it, NONE until the event came */
  GstClockTime pipeline_latency;

  /* the backup input (request pad `backup`, at most one), under
   * self->lock like the main one's fields */
  GstPad *backuppad;
  ClockBridge *backup;
  gboolean backup_flushing, backup_eos, backup_rt_tried;
  GstClockTime backup_last_input;
  /* the policy and mixer, and the chunks of each core (task); the mapped
   * fallback file (made at READY->PAUSED) */
  Failover *failover;
  float *main_chunk, *backup_chunk;
  GMappedFile *fallback_map;
  /* the output's chunks (task; made at READY->PAUSED): a chunk comes back
   * to the pool when the graph after the bridge drops it (audioconvert
   * before the payloader), so no chunk is allocated while playing */
  GstBufferPool *pool;

  /* task (see the threading note) */
  gboolean sent_head;           /* stream-start, caps, segment pushed */
  gboolean have_origin;
  GstClockTime origin;          /* running time of the first chunk */
  guint64 frames_out;
  guint64 next_message;         /* frames_out at which to post */
  guint chunk_frames;
  guint64 interval_frames;
  /* the output's level (meter-interval > 0): one `level` message per
   * interval, as GStreamer's level element after the bridge posted it */
  gboolean metering;
  OutputMeter meter;
  gboolean input_rt_tried;      /* streaming thread of the sink pad */
  /* the threads run SCHED_FIFO (the message says so) */
  gboolean input_rt, output_rt;
  /* each real-time thread's guard state, touched by that thread only */
  RtGuardThread output_guard, input_guard, backup_guard;
};

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS (TEMPLATE_CAPS));
static GstStaticPadTemplate backup_template =
GST_STATIC_PAD_TEMPLATE ("backup", GST_PAD_SINK, GST_PAD_REQUEST,
    GST_STATIC_CAPS (TEMPLATE_CAPS));
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS (TEMPLATE_CAPS));

G_DEFINE_TYPE (GstClockBridge, gst_clock_bridge, GST_TYPE_ELEMENT);
GST_ELEMENT_REGISTER_DEFINE (clockbridge, "clockbridge", GST_RANK_NONE,
    GST_TYPE_CLOCK_BRIDGE);

static void gst_clock_bridge_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec);
static void gst_clock_bridge_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec);
static void gst_clock_bridge_finalize (GObject * object);
static GstStateChangeReturn gst_clock_bridge_change_state (GstElement *
    element, GstStateChange transition);
static GstClock *gst_clock_bridge_provide_clock (GstElement * element);
static GstFlowReturn gst_clock_bridge_chain (GstPad * pad, GstObject * parent,
    GstBuffer * buffer);
static gboolean gst_clock_bridge_sink_event (GstPad * pad, GstObject * parent,
    GstEvent * event);
static gboolean gst_clock_bridge_sink_query (GstPad * pad, GstObject * parent,
    GstQuery * query);
static gboolean gst_clock_bridge_src_event (GstPad * pad, GstObject * parent,
    GstEvent * event);
static gboolean gst_clock_bridge_src_query (GstPad * pad, GstObject * parent,
    GstQuery * query);
static gboolean gst_clock_bridge_src_activate_mode (GstPad * pad,
    GstObject * parent, GstPadMode mode, gboolean active);
static GstIterator *gst_clock_bridge_no_links (GstPad * pad,
    GstObject * parent);
static gboolean ask_realtime (GstClockBridge * self, int priority,
    const gchar * which);
static gboolean keep_realtime (GstClockBridge * self, RtGuardThread * g,
    gboolean was, int priority, const gchar * which);
static GstPad *gst_clock_bridge_request_new_pad (GstElement * element,
    GstPadTemplate * templ, const gchar * name, const GstCaps * caps);
static void gst_clock_bridge_release_pad (GstElement * element, GstPad * pad);

static void
gst_clock_bridge_class_init (GstClockBridgeClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  const GParamFlags flags = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
      GST_PARAM_MUTABLE_READY;
  /* settable while playing (enginecontrol) */
  const GParamFlags live = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
      GST_PARAM_MUTABLE_PLAYING;

  gobject_class->set_property = gst_clock_bridge_set_property;
  gobject_class->get_property = gst_clock_bridge_get_property;
  gobject_class->finalize = gst_clock_bridge_finalize;

  g_object_class_install_property (gobject_class, PROP_CLOCK_SOURCE,
      g_param_spec_string ("clock-source", "Clock source",
          "The clock provided to the pipeline: tai, realtime or /dev/ptpN",
          DEFAULT_CLOCK_SOURCE, flags));
  g_object_class_install_property (gobject_class, PROP_JITTER,
      g_param_spec_uint64 ("jitter", "Jitter",
          "Target FIFO fill (input jitter margin), ns",
          MIN_JITTER, MAX_JITTER, DEFAULT_JITTER, flags));
  g_object_class_install_property (gobject_class, PROP_JITTER_MAX,
      g_param_spec_uint64 ("jitter-max", "Jitter max",
          "Ceiling of the FIFO's setpoint (jitter + the input's depth), ns; "
          "0: jitter + 0.5 s", 0, MAX_JITTER_MAX, 0, flags));
  g_object_class_install_property (gobject_class, PROP_CHUNK,
      g_param_spec_uint64 ("chunk", "Chunk",
          "Duration of each output buffer, ns (whole milliseconds)",
          MIN_CHUNK, MAX_CHUNK, DEFAULT_CHUNK, flags));
  g_object_class_install_property (gobject_class, PROP_INTERVAL,
      g_param_spec_uint64 ("interval", "Interval",
          "Period of the clockbridge statistics message, ns",
          MIN_INTERVAL, G_MAXUINT64, DEFAULT_INTERVAL, flags));
  g_object_class_install_property (gobject_class, PROP_METER_INTERVAL,
      g_param_spec_uint64 ("meter-interval", "Meter interval",
          "Period of the `level` message (the output's RMS and peak per "
          "channel, as GStreamer's level posts them), ns; 0: none",
          0, G_MAXUINT64, 0, flags));
  g_object_class_install_property (gobject_class, PROP_CHANNELS,
      g_param_spec_int ("channels", "Channels",
          "Channels of both pads", 1, MAX_CHANNELS, DEFAULT_CHANNELS, flags));
  g_object_class_install_property (gobject_class, PROP_PACE_INPUT,
      g_param_spec_boolean ("pace-input", "Pace input",
          "The input can wait (a pipe or file, not a live sender): block it "
          "instead of dropping audio when the FIFO is full", FALSE, flags));
  g_object_class_install_property (gobject_class, PROP_FALLBACK_FILE,
      g_param_spec_string ("fallback-file", "Fallback file",
          "Raw F32LE interleaved samples at 48 kHz, `channels` channels, "
          "played looped when main and backup are lost (empty: none)",
          "", flags));
  g_object_class_install_property (gobject_class, PROP_FAILOVER_LOSS,
      g_param_spec_uint64 ("failover-loss", "Failover loss",
          "The input on air without audio this long: another input, ns",
          MIN_FAILOVER_LOSS, MAX_FAILOVER_LOSS, DEFAULT_FAILOVER_LOSS,
          live));
  g_object_class_install_property (gobject_class,
      PROP_FAILOVER_SILENCE_LEVEL, g_param_spec_double
      ("failover-silence-level", "Failover silence level",
          "Below this short-term level (400 ms, dBFS) an input is silent",
          -90.0, 0.0, DEFAULT_SILENCE_LEVEL, live));
  g_object_class_install_property (gobject_class, PROP_FAILOVER_SILENCE,
      g_param_spec_uint64 ("failover-silence", "Failover silence",
          "Main silent this long while the backup is not: the backup, ns",
          MIN_FAILOVER_SILENCE, MAX_FAILOVER_SILENCE,
          DEFAULT_FAILOVER_SILENCE, live));
  g_object_class_install_property (gobject_class, PROP_FAILOVER_RETURN,
      g_param_spec_uint64 ("failover-return", "Failover return",
          "Main back with audio, audible, this long without a break: main "
          "again, ns", 0, MAX_FAILOVER_RETURN, DEFAULT_FAILOVER_RETURN,
          live));
  g_object_class_install_property (gobject_class, PROP_FALLBACK_ON_SILENCE,
      g_param_spec_boolean ("fallback-on-silence", "Fallback on silence",
          "Main and backup both silent for failover-silence: the fallback "
          "file", FALSE, live));
  g_object_class_install_property (gobject_class, PROP_SELECT,
      g_param_spec_enum ("select", "Select",
          "The input forced on air, or auto (the failover policy)",
          GST_TYPE_CLOCK_BRIDGE_SELECT, FAILOVER_SELECT_AUTO, live));

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_add_static_pad_template (element_class, &backup_template);
  element_class->request_new_pad =
      GST_DEBUG_FUNCPTR (gst_clock_bridge_request_new_pad);
  element_class->release_pad = GST_DEBUG_FUNCPTR (gst_clock_bridge_release_pad);
  element_class->change_state =
      GST_DEBUG_FUNCPTR (gst_clock_bridge_change_state);
  element_class->provide_clock =
      GST_DEBUG_FUNCPTR (gst_clock_bridge_provide_clock);

  gst_element_class_set_static_metadata (element_class,
      "Clock bridge", "Filter/Audio",
      "Crosses from the sender's clock to the pipeline clock with an "
      "adaptive resampler; provides the pipeline clock", "audio-engine");

  GST_DEBUG_CATEGORY_INIT (clock_bridge_debug, "clockbridge", 0,
      "clockbridge");
}

static void
gst_clock_bridge_init (GstClockBridge * self)
{
  self->clock_source = g_strdup (DEFAULT_CLOCK_SOURCE);
  self->jitter = DEFAULT_JITTER;
  self->chunk = DEFAULT_CHUNK;
  self->interval = DEFAULT_INTERVAL;
  self->channels = DEFAULT_CHANNELS;
  self->fallback_file = g_strdup ("");
  failover_defaults (&self->failover_set);
  self->backup_last_input = GST_CLOCK_TIME_NONE;
  g_mutex_init (&self->lock);
  g_cond_init (&self->cond);
  self->last_input = GST_CLOCK_TIME_NONE;
  self->sleep_clock = (clockid_t) - 1;

  self->sinkpad = gst_pad_new_from_static_template (&sink_template, "sink");
  gst_pad_set_chain_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_clock_bridge_chain));
  gst_pad_set_event_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_clock_bridge_sink_event));
  gst_pad_set_query_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_clock_bridge_sink_query));
  gst_pad_set_iterate_internal_links_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_clock_bridge_no_links));
  gst_element_add_pad (GST_ELEMENT (self), self->sinkpad);

  self->srcpad = gst_pad_new_from_static_template (&src_template, "src");
  gst_pad_set_event_function (self->srcpad,
      GST_DEBUG_FUNCPTR (gst_clock_bridge_src_event));
  gst_pad_set_query_function (self->srcpad,
      GST_DEBUG_FUNCPTR (gst_clock_bridge_src_query));
  gst_pad_set_activatemode_function (self->srcpad,
      GST_DEBUG_FUNCPTR (gst_clock_bridge_src_activate_mode));
  gst_pad_set_iterate_internal_links_function (self->srcpad,
      GST_DEBUG_FUNCPTR (gst_clock_bridge_no_links));
  gst_pad_use_fixed_caps (self->srcpad);
  gst_element_add_pad (GST_ELEMENT (self), self->srcpad);

  GST_OBJECT_FLAG_SET (self, GST_ELEMENT_FLAG_PROVIDE_CLOCK);
}

/* clock-source: tai, realtime or /dev/ptpN with N a decimal number */
static gboolean
clock_source_valid (const gchar * s)
{
  const gchar *n;

  if (s == NULL)
    return FALSE;
  if (strcmp (s, "tai") == 0 || strcmp (s, "realtime") == 0)
    return TRUE;
  if (!g_str_has_prefix (s, "/dev/ptp"))
    return FALSE;
  n = s + strlen ("/dev/ptp");
  if (*n == '\0' || strlen (n) > 4)
    return FALSE;
  for (; *n; n++)
    if (!g_ascii_isdigit (*n))
      return FALSE;
  return TRUE;
}

/* under the object lock: remembers the first refused value */
static void refuse (GstClockBridge * self, const gchar * format, ...)
    G_GNUC_PRINTF (2, 3);

static void
refuse (GstClockBridge * self, const gchar * format, ...)
{
  va_list args;
  gchar *msg;

  va_start (args, format);
  msg = g_strdup_vprintf (format, args);
  va_end (args);
  GST_WARNING_OBJECT (self, "%s", msg);
  g_warning ("clockbridge: %s", msg);
  if (self->settings_error == NULL)
    self->settings_error = msg;
  else
    g_free (msg);
}

static void
gst_clock_bridge_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstClockBridge *self = GST_CLOCK_BRIDGE (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_CLOCK_SOURCE:{
      const gchar *s = g_value_get_string (value);
      if (clock_source_valid (s)) {
        g_free (self->clock_source);
        self->clock_source = g_strdup (s);
      } else {
        refuse (self, "clock-source must be tai, realtime or /dev/ptpN, got "
            "'%s'", s ? s : "(null)");
      }
      break;
    }
    case PROP_JITTER:
      self->jitter = g_value_get_uint64 (value);
      break;
    case PROP_JITTER_MAX:
      self->jitter_max = g_value_get_uint64 (value);
      break;
    case PROP_CHUNK:{
      guint64 v = g_value_get_uint64 (value);
      if (v % GST_MSECOND == 0) {
        self->chunk = v;
      } else {
        refuse (self, "chunk must be whole milliseconds (1000000 ns steps), "
            "got %" G_GUINT64_FORMAT, v);
      }
      break;
    }
    case PROP_INTERVAL:
      self->interval = g_value_get_uint64 (value);
      break;
    case PROP_METER_INTERVAL:{
      guint64 v = g_value_get_uint64 (value);
      if (v == 0 || v >= MIN_METER_INTERVAL) {
        self->meter_interval = v;
      } else {
        refuse (self, "meter-interval must be 0 (none) or at least 10000000 "
            "ns (10 ms), got %" G_GUINT64_FORMAT, v);
      }
      break;
    }
    case PROP_CHANNELS:
      self->channels = g_value_get_int (value);
      break;
    case PROP_PACE_INPUT:
      self->pace_input = g_value_get_boolean (value);
      break;
    case PROP_FALLBACK_FILE:
      g_free (self->fallback_file);
      self->fallback_file = g_strdup (g_value_get_string (value) ?
          g_value_get_string (value) : "");
      break;
    case PROP_FAILOVER_LOSS:
      self->failover_set.loss_s =
          (gdouble) g_value_get_uint64 (value) / GST_SECOND;
      break;
    case PROP_FAILOVER_SILENCE_LEVEL:
      self->failover_set.silence_level_db = g_value_get_double (value);
      break;
    case PROP_FAILOVER_SILENCE:
      self->failover_set.silence_s =
          (gdouble) g_value_get_uint64 (value) / GST_SECOND;
      break;
    case PROP_FAILOVER_RETURN:
      self->failover_set.return_s =
          (gdouble) g_value_get_uint64 (value) / GST_SECOND;
      break;
    case PROP_FALLBACK_ON_SILENCE:
      self->failover_set.fallback_on_silence = g_value_get_boolean (value);
      break;
    case PROP_SELECT:
      self->failover_set.select = (FailoverSelect) g_value_get_enum (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_clock_bridge_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec)
{
  GstClockBridge *self = GST_CLOCK_BRIDGE (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_CLOCK_SOURCE:
      g_value_set_string (value, self->clock_source);
      break;
    case PROP_JITTER:
      g_value_set_uint64 (value, self->jitter);
      break;
    case PROP_JITTER_MAX:
      g_value_set_uint64 (value, self->jitter_max);
      break;
    case PROP_CHUNK:
      g_value_set_uint64 (value, self->chunk);
      break;
    case PROP_INTERVAL:
      g_value_set_uint64 (value, self->interval);
      break;
    case PROP_METER_INTERVAL:
      g_value_set_uint64 (value, self->meter_interval);
      break;
    case PROP_CHANNELS:
      g_value_set_int (value, self->channels);
      break;
    case PROP_PACE_INPUT:
      g_value_set_boolean (value, self->pace_input);
      break;
    case PROP_FALLBACK_FILE:
      g_value_set_string (value, self->fallback_file);
      break;
    case PROP_FAILOVER_LOSS:
      g_value_set_uint64 (value, (guint64) llround
          (self->failover_set.loss_s * GST_SECOND));
      break;
    case PROP_FAILOVER_SILENCE_LEVEL:
      g_value_set_double (value, self->failover_set.silence_level_db);
      break;
    case PROP_FAILOVER_SILENCE:
      g_value_set_uint64 (value, (guint64) llround
          (self->failover_set.silence_s * GST_SECOND));
      break;
    case PROP_FAILOVER_RETURN:
      g_value_set_uint64 (value, (guint64) llround
          (self->failover_set.return_s * GST_SECOND));
      break;
    case PROP_FALLBACK_ON_SILENCE:
      g_value_set_boolean (value, self->failover_set.fallback_on_silence);
      break;
    case PROP_SELECT:
      g_value_set_enum (value, self->failover_set.select);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_clock_bridge_finalize (GObject * object)
{
  GstClockBridge *self = GST_CLOCK_BRIDGE (object);

  clock_bridge_free (self->bridge);
  clock_bridge_free (self->backup);
  failover_free (self->failover);
  g_free (self->main_chunk);
  g_free (self->backup_chunk);
  if (self->fallback_map)
    g_mapped_file_unref (self->fallback_map);
  if (self->pool) {
    gst_buffer_pool_set_active (self->pool, FALSE);
    gst_object_unref (self->pool);
  }
  if (self->clock)
    gst_object_unref (self->clock);
  g_free (self->clock_source);
  g_free (self->fallback_file);
  g_free (self->settings_error);
  g_mutex_clear (&self->lock);
  g_cond_clear (&self->cond);
  G_OBJECT_CLASS (gst_clock_bridge_parent_class)->finalize (object);
}

static GstIterator *
gst_clock_bridge_no_links (GstPad * pad, GstObject * parent)
{
  /* the two pads live in different clock domains: nothing is forwarded */
  GValue none = G_VALUE_INIT;
  GstIterator *it;

  g_value_init (&none, GST_TYPE_PAD);
  it = gst_iterator_new_single (GST_TYPE_PAD, &none);
  g_value_unset (&none);
  return it;
}

static GstCaps *
fixed_caps (GstClockBridge * self)
{
  gint channels;

  GST_OBJECT_LOCK (self);
  channels = self->channels;
  GST_OBJECT_UNLOCK (self);
  return gst_caps_new_simple ("audio/x-raw",
      "format", G_TYPE_STRING, "F32LE",
      "layout", G_TYPE_STRING, "interleaved",
      "rate", G_TYPE_INT, RATE, "channels", G_TYPE_INT, channels, NULL);
}

static gboolean
answer_caps_query (GstClockBridge * self, GstQuery * query)
{
  GstCaps *filter, *caps = fixed_caps (self);

  gst_query_parse_caps (query, &filter);
  if (filter) {
    GstCaps *c = gst_caps_intersect_full (filter, caps,
        GST_CAPS_INTERSECT_FIRST);
    gst_caps_unref (caps);
    caps = c;
  }
  gst_query_set_caps_result (query, caps);
  gst_caps_unref (caps);
  return TRUE;
}

static gboolean
answer_accept_caps (GstClockBridge * self, GstQuery * query)
{
  GstCaps *offered, *caps = fixed_caps (self);

  gst_query_parse_accept_caps (query, &offered);
  gst_query_set_accept_caps_result (query,
      gst_caps_is_subset (offered, caps));
  gst_caps_unref (caps);
  return TRUE;
}

static gboolean
gst_clock_bridge_sink_query (GstPad * pad, GstObject * parent, GstQuery * query)
{
  GstClockBridge *self = GST_CLOCK_BRIDGE (parent);

  switch (GST_QUERY_TYPE (query)) {
    case GST_QUERY_CAPS:
      return answer_caps_query (self, query);
    case GST_QUERY_ACCEPT_CAPS:
      return answer_accept_caps (self, query);
    default:
      return FALSE;
  }
}

static gboolean
gst_clock_bridge_src_query (GstPad * pad, GstObject * parent, GstQuery * query)
{
  GstClockBridge *self = GST_CLOCK_BRIDGE (parent);

  switch (GST_QUERY_TYPE (query)) {
    case GST_QUERY_CAPS:
      return answer_caps_query (self, query);
    case GST_QUERY_ACCEPT_CAPS:
      return answer_accept_caps (self, query);
    case GST_QUERY_LATENCY:{
      GstClockTime chunk;
      GST_OBJECT_LOCK (self);
      chunk = self->chunk;
      GST_OBJECT_UNLOCK (self);
      /* a live source; upstream's latency ends in the FIFO */
      gst_query_set_latency (query, TRUE, chunk + LATENCY_MARGIN,
          GST_CLOCK_TIME_NONE);
      return TRUE;
    }
    default:
      return FALSE;
  }
}

static gboolean
gst_clock_bridge_src_event (GstPad * pad, GstObject * parent, GstEvent * event)
{
  GstClockBridge *self = GST_CLOCK_BRIDGE (parent);
  gboolean ret = GST_EVENT_TYPE (event) != GST_EVENT_SEEK;

  if (GST_EVENT_TYPE (event) == GST_EVENT_LATENCY) {
    GstClockTime latency;

    gst_event_parse_latency (event, &latency);
    g_mutex_lock (&self->lock);
    self->pipeline_latency = latency;
    g_mutex_unlock (&self->lock);
    GST_DEBUG_OBJECT (self, "pipeline latency %" GST_TIME_FORMAT,
        GST_TIME_ARGS (latency));
  }
  /* nothing goes upstream across the clock boundary; a seek is refused */
  gst_event_unref (event);
  return ret;
}

static gboolean
check_caps (GstClockBridge * self, GstCaps * caps)
{
  GstCaps *mine = fixed_caps (self);
  gboolean ok = gst_caps_is_subset (caps, mine);

  if (!ok)
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, (NULL),
        ("input caps %" GST_PTR_FORMAT " are not %" GST_PTR_FORMAT, caps,
            mine));
  gst_caps_unref (mine);
  return ok;
}

/* the backup pad's events: as the main one's, on its own core */
static gboolean
backup_event (GstClockBridge * self, GstEvent * event)
{
  gboolean ret = TRUE;

  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_CAPS:{
      GstCaps *caps;
      gst_event_parse_caps (event, &caps);
      ret = check_caps (self, caps);
      break;
    }
    case GST_EVENT_EOS:
      g_mutex_lock (&self->lock);
      self->backup_eos = TRUE;
      if (self->backup)
        clock_bridge_drain (self->backup);
      g_mutex_unlock (&self->lock);
      break;
    case GST_EVENT_FLUSH_START:
      g_mutex_lock (&self->lock);
      self->backup_flushing = TRUE;
      g_mutex_unlock (&self->lock);
      break;
    case GST_EVENT_FLUSH_STOP:
      g_mutex_lock (&self->lock);
      self->backup_flushing = FALSE;
      if (self->backup && !self->backup_eos)
        clock_bridge_flush (self->backup);
      g_mutex_unlock (&self->lock);
      break;
    default:
      break;
  }
  gst_event_unref (event);
  return ret;
}

static gboolean
gst_clock_bridge_sink_event (GstPad * pad, GstObject * parent, GstEvent * event)
{
  GstClockBridge *self = GST_CLOCK_BRIDGE (parent);
  gboolean ret = TRUE;

  if (pad != self->sinkpad)
    return backup_event (self, event);
  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_CAPS:{
      GstCaps *caps;
      gst_event_parse_caps (event, &caps);
      ret = check_caps (self, caps);
      break;
    }
    case GST_EVENT_EOS:
      g_mutex_lock (&self->lock);
      self->eos_in = TRUE;
      if (self->bridge)
        clock_bridge_drain (self->bridge);
      g_mutex_unlock (&self->lock);
      break;
    case GST_EVENT_FLUSH_START:
      g_mutex_lock (&self->lock);
      self->sink_flushing = TRUE;
      g_cond_broadcast (&self->cond);   /* a paced write waiting */
      g_mutex_unlock (&self->lock);
      break;
    case GST_EVENT_FLUSH_STOP:
      g_mutex_lock (&self->lock);
      self->sink_flushing = FALSE;
      if (self->bridge && !self->eos_in)
        clock_bridge_flush (self->bridge);
      g_mutex_unlock (&self->lock);
      break;
    default:
      /* stream-start, segment, tags, gaps: the output has its own */
      break;
  }
  gst_event_unref (event);
  return ret;
}

/* a clock time as running time in seconds: the bridge's time axis */
static gdouble
running_seconds (GstClockBridge * self, GstClockTime now)
{
  GstClockTime base = gst_element_get_base_time (GST_ELEMENT (self));

  if (!GST_CLOCK_TIME_IS_VALID (now) || now < base)
    return 0.0;
  return (gdouble) (now - base) / GST_SECOND;
}

/* the backup pad's buffers: written into its own core (never paced: a
 * live sender), on its own streaming thread */
static GstFlowReturn
backup_chain (GstClockBridge * self, GstBuffer * buffer)
{
  GstClock *clock = gst_element_get_clock (GST_ELEMENT (self));
  GstFlowReturn ret = GST_FLOW_OK;
  GstMapInfo map;
  gsize frame_bytes;

  if (!self->backup_rt_tried) {
    self->backup_rt_tried = TRUE;
    ask_realtime (self, INPUT_RT_PRIORITY, "backup input");
  } else {
    keep_realtime (self, &self->backup_guard, TRUE, INPUT_RT_PRIORITY,
        "backup input");
  }
  g_mutex_lock (&self->lock);
  if (self->backup_flushing) {
    ret = GST_FLOW_FLUSHING;
  } else if (self->backup_eos) {
    ret = GST_FLOW_EOS;
  } else if (self->backup && gst_buffer_map (buffer, &map, GST_MAP_READ)) {
    GST_OBJECT_LOCK (self);
    frame_bytes = sizeof (float) * self->channels;
    GST_OBJECT_UNLOCK (self);
    if (clock)
      self->backup_last_input = gst_clock_get_time (clock);
    clock_bridge_write (self->backup, (const float *) map.data,
        map.size / frame_bytes, running_seconds (self,
            self->backup_last_input));
    gst_buffer_unmap (buffer, &map);
    if (self->src_flow == GST_FLOW_NOT_LINKED
        || self->src_flow < GST_FLOW_EOS)
      ret = self->src_flow;
  }
  g_mutex_unlock (&self->lock);
  if (clock)
    gst_object_unref (clock);
  gst_buffer_unref (buffer);
  return ret;
}

static GstFlowReturn
gst_clock_bridge_chain (GstPad * pad, GstObject * parent, GstBuffer * buffer)
{
  GstClockBridge *self = GST_CLOCK_BRIDGE (parent);
  GstClock *clock;
  GstFlowReturn ret = GST_FLOW_OK;
  GstMapInfo map;
  gsize frame_bytes;

  if (pad != self->sinkpad)
    return backup_chain (self, buffer);
  clock = gst_element_get_clock (GST_ELEMENT (self));
  if (!self->input_rt_tried) {
    /* the thread that brings a live input (srtsrc's: receive, demux,
     * decode, here) is the other half of the FIFO's reserve: on a busy
     * host a SCHED_OTHER input thread ran tens of ms late (16 pipelines
     * and their senders on 2 cores: 1-3 underruns a pipeline in 150 s,
     * 0-1 of 6-18 ms with this).  A paced input waits for room anyway
     * and holds up to seconds: it stays as it is. */
    self->input_rt_tried = TRUE;
    if (!self->paced)
      self->input_rt = ask_realtime (self, INPUT_RT_PRIORITY, "input");
  } else if (!self->paced) {
    self->input_rt = keep_realtime (self, &self->input_guard, self->input_rt,
        INPUT_RT_PRIORITY, "input");
  }
  g_mutex_lock (&self->lock);
  if (self->sink_flushing) {
    ret = GST_FLOW_FLUSHING;
  } else if (self->eos_in) {
    ret = GST_FLOW_EOS;
  } else if (self->bridge && gst_buffer_map (buffer, &map, GST_MAP_READ)) {
    GST_OBJECT_LOCK (self);
    frame_bytes = sizeof (float) * self->channels;
    GST_OBJECT_UNLOCK (self);
    /* paced input: wait for the output to make room (each read signals) */
    while (clock_bridge_full (self->bridge, map.size / frame_bytes)
        && !self->sink_flushing && !self->task_stop
        && self->src_flow == GST_FLOW_OK) {
      g_cond_wait (&self->cond, &self->lock);
      clock_bridge_waited (self->bridge);
    }
    if (clock)
      self->last_input = gst_clock_get_time (clock);
    GST_LOG_OBJECT (self, "%" G_GSIZE_FORMAT " frames at %" GST_TIME_FORMAT
        " pts %" GST_TIME_FORMAT, map.size / frame_bytes,
        GST_TIME_ARGS (self->last_input),
        GST_TIME_ARGS (GST_BUFFER_PTS (buffer)));
    clock_bridge_write (self->bridge, (const float *) map.data,
        map.size / frame_bytes, running_seconds (self, self->last_input));
    gst_buffer_unmap (buffer, &map);
    /* a stopped output (not linked, error) stops the input too */
    if (self->src_flow == GST_FLOW_NOT_LINKED
        || self->src_flow < GST_FLOW_EOS)
      ret = self->src_flow;
  }
  g_mutex_unlock (&self->lock);
  if (clock)
    gst_object_unref (clock);
  gst_buffer_unref (buffer);
  return ret;
}

static void
push_head (GstClockBridge * self)
{
  gchar *id;
  GstAudioInfo info;
  GstCaps *caps;
  GstSegment segment;
  gint channels;

  GST_OBJECT_LOCK (self);
  channels = self->channels;
  GST_OBJECT_UNLOCK (self);

  /* GStreamer derives an id from the one sink pad; with two it makes
   * none: a random one, as it does for a source */
  if (self->backuppad == NULL)
    id = gst_pad_create_stream_id (self->srcpad, GST_ELEMENT (self), NULL);
  else
    id = g_strdup_printf ("%08x%08x%08x%08x", g_random_int (),
        g_random_int (), g_random_int (), g_random_int ());
  gst_pad_push_event (self->srcpad, gst_event_new_stream_start (id));
  g_free (id);
  gst_audio_info_set_format (&info, GST_AUDIO_FORMAT_F32LE, RATE, channels,
      NULL);
  caps = gst_audio_info_to_caps (&info);
  gst_pad_push_event (self->srcpad, gst_event_new_caps (caps));
  gst_caps_unref (caps);
  gst_segment_init (&segment, GST_FORMAT_TIME);
  gst_pad_push_event (self->srcpad, gst_event_new_segment (&segment));
}

/* what the failover policy did in a chunk and where it stands after it */
typedef struct
{
  FailoverStatus status;
  gboolean switched;
  FailoverSwitch sw;
} FailoverReport;

/* the `failover` message: one per switch */
static void
post_failover (GstClockBridge * self, const FailoverSwitch * sw,
    GstClockTime running_time)
{
  GstStructure *s = gst_structure_new ("failover",
      "running-time", G_TYPE_UINT64, (guint64) running_time,
      "from", G_TYPE_STRING, failover_input_name (sw->from),
      "to", G_TYPE_STRING, failover_input_name (sw->to),
      "reason", G_TYPE_STRING, failover_reason_name (sw->reason),
      "main-level", G_TYPE_DOUBLE, sw->main_level,
      "backup-level", G_TYPE_DOUBLE, sw->backup_level,
      "main-silent", G_TYPE_DOUBLE, sw->main_silent_s,
      "backup-silent", G_TYPE_DOUBLE, sw->backup_silent_s,
      "lost", G_TYPE_DOUBLE, sw->lost_s, NULL);

  GST_INFO_OBJECT (self, "failover %s -> %s (%s)",
      failover_input_name (sw->from), failover_input_name (sw->to),
      failover_reason_name (sw->reason));
  gst_element_post_message (GST_ELEMENT (self),
      gst_message_new_element (GST_OBJECT (self), s));
}

/* the failover fields of the periodic message (the backup's only with a
 * backup pad) */
static void
add_failover_fields (GstStructure * s, const FailoverStatus * fo)
{
  const FailoverInputStatus *m = &fo->input[FAILOVER_MAIN];
  const FailoverInputStatus *b = &fo->input[FAILOVER_BACKUP];

  gst_structure_set (s,
      "active-input", G_TYPE_STRING, failover_input_name (fo->active),
      "selection", G_TYPE_STRING, failover_select_name (fo->selection),
      "main-connected", G_TYPE_BOOLEAN, m->connected,
      "main-level", G_TYPE_DOUBLE, m->level,
      "main-silent", G_TYPE_DOUBLE, m->silent_s, NULL);
  if (fo->have_backup)
    gst_structure_set (s,
        "backup-connected", G_TYPE_BOOLEAN, b->connected,
        "backup-level", G_TYPE_DOUBLE, b->level,
        "backup-silent", G_TYPE_DOUBLE, b->silent_s, NULL);
  gst_structure_set (s, "output-silent", G_TYPE_DOUBLE, fo->output_silent_s,
      NULL);
}

static void
post_stats (GstClockBridge * self, const ClockBridgeStats * st,
    gboolean input_active, GstClockTime running_time, GstClockTime downstream,
    const FailoverStatus * fo)
{
  GstStructure *s;

  s = gst_structure_new ("clockbridge",
      "running-time", G_TYPE_UINT64, (guint64) running_time,
      "drift-ppm", G_TYPE_DOUBLE, st->drift_ppm,
      /* the drift from about 10 s on with its ~95 % half-width, ppm (nan
       * while there is none), whether drift-ppm is known or not */
      "drift-estimate", G_TYPE_DOUBLE, st->drift_estimate_ppm,
      "drift-uncertainty", G_TYPE_DOUBLE, st->drift_uncertainty_ppm,
      "fill", G_TYPE_DOUBLE, st->fill_s,
      "target", G_TYPE_DOUBLE, st->target_s,
      "setpoint", G_TYPE_DOUBLE, st->setpoint_s,
      /* the setpoint above the target, its ceiling, and what the ceiling
       * cost: episodes of a depth asked above it, underruns at it */
      "depth", G_TYPE_DOUBLE, st->depth_s,
      "ceiling", G_TYPE_DOUBLE, st->ceiling_s,
      "ceiling-hits", G_TYPE_UINT64, (guint64) st->ceiling_hits,
      "ceiling-underruns", G_TYPE_UINT64, (guint64) st->ceiling_underruns,
      "underruns", G_TYPE_UINT64, (guint64) st->underruns,
      "overruns", G_TYPE_UINT64, (guint64) st->overruns,
      "input-active", G_TYPE_BOOLEAN, input_active,
      "input-frames", G_TYPE_UINT64, (guint64) st->frames_in,
      /* the output's silence between underruns and the input's return
       * within 1 s: audio that came late, not an input that stopped */
      "inserted-silence", G_TYPE_DOUBLE, st->inserted_s,
      "last-underrun", G_TYPE_DOUBLE, st->last_gap_s,
      /* the threads' scheduling: SCHED_FIFO where the process may have it
       * (the input's is known from its first buffer on) */
      "output-realtime", G_TYPE_BOOLEAN, self->output_rt,
      "input-realtime", G_TYPE_BOOLEAN, self->input_rt,
      /* real-time threads of this process the guard moved to SCHED_OTHER */
      "realtime-demotions", G_TYPE_UINT64, (guint64) rt_guard_demotions (),
      /* the FIFO's average fill is the average time a frame spends in it;
       * after it, the steps' own latency (a look-ahead); the chunk leaves
       * when read */
      "latency", G_TYPE_DOUBLE,
      st->fill_s + (gdouble) downstream / GST_SECOND,
      "ratio", G_TYPE_DOUBLE, st->ratio, NULL);
  add_failover_fields (s, fo);
  gst_element_post_message (GST_ELEMENT (self),
      gst_message_new_element (GST_OBJECT (self), s));
}

static void
stop_task (GstClockBridge * self)
{
  gst_pad_pause_task (self->srcpad);
}

/* asks SCHED_FIFO `priority` for the calling thread; refused (no
 * CAP_SYS_NICE or RLIMIT_RTPRIO, a systemd unit's RestrictRealtime=yes),
 * the thread runs as before, said once in the debug log.  Before the first
 * real-time thread the guard is installed and RLIMIT_RTTIME lowered to
 * RT_CPU_LIMIT_US (a limit the process may always lower). */
static gboolean
ask_realtime (GstClockBridge * self, int priority, const gchar * which)
{
  int err;

  rt_guard_install (RT_CPU_LIMIT_US);
  err = rt_guard_realtime (priority);
  if (err != 0)
    GST_INFO_OBJECT (self, "%s thread stays SCHED_OTHER: %s", which,
        g_strerror (err));
  return err == 0;
}

/* The calling real-time thread's guard: moved to SCHED_OTHER since the last
 * call (the guard wrote a line on stderr), it runs so until it has blocked,
 * then asks for real time again.  Returns whether it runs SCHED_FIFO; cheap
 * while nothing happened.  `was` is what the thread had. */
static gboolean
keep_realtime (GstClockBridge * self, RtGuardThread * g, gboolean was,
    int priority, const gchar * which)
{
  switch (rt_guard_poll (g)) {
    case RT_GUARD_DEMOTED:
      GST_WARNING_OBJECT (self, "%s thread ran %d ms of real-time CPU without "
          "blocking: SCHED_OTHER until it blocks", which,
          RT_CPU_LIMIT_US / 1000);
      return FALSE;
    case RT_GUARD_BLOCKED_SINCE:
      return ask_realtime (self, priority, which);
    case RT_GUARD_FINE:
    default:
      return was;
  }
}

/* The chunk the task produces next: its PTS and end (running time), when it
 * is read (`due`), and the steps' latency after the bridge (`downstream`).
 * Under self->lock. */
typedef struct
{
  GstClockTime pts, end, due, downstream;
} Chunk;

/* The chunk is read when the sink is due to send it (running time pts + the
 * pipeline's latency), not when its last sample is (end): then the sink does
 * not wait again (one wake-up per chunk, not two: the second cost 0.85-1.54
 * points of a core per pipeline without processing steps on the 2-core VM)
 * and the audio does not sit for the latency's margin and the steps'
 * reported latency after the FIFO.  The graph after the bridge
 * (microseconds) makes the packet that late; udpsink sync=true still holds
 * back anything early. */
static Chunk
next_chunk (GstClockBridge * self)
{
  Chunk c;

  c.pts = self->origin + gst_util_uint64_scale (self->frames_out, GST_SECOND,
      RATE);
  c.end = self->origin + gst_util_uint64_scale (self->frames_out +
      self->chunk_frames, GST_SECOND, RATE);
  c.due = c.end;
  c.downstream = 0;
  if (GST_CLOCK_TIME_IS_VALID (self->pipeline_latency)) {
    GstClockTime own = gst_util_uint64_scale (self->chunk_frames, GST_SECOND,
        RATE) + LATENCY_MARGIN;
    c.due = MAX (c.end, c.pts + self->pipeline_latency);
    c.downstream = self->pipeline_latency > own ?
        self->pipeline_latency - own : 0;
  }
  return c;
}

/* Waits on the pipeline clock until the chunk is due.  Under self->lock,
 * which it gives up while it waits; returns the clock's time after the wait,
 * or NONE when the task is stopping or pausing (the next iteration decides).
 *
 * On the clock this element provides for tai and realtime (a GstSystemClock
 * on CLOCK_TAI or CLOCK_REALTIME, not calibrated) a wait of at most
 * DIRECT_SLEEP_MAX is one clock_nanosleep on that kernel clock, as the floor
 * sender sleeps: no clock entry made, locked, waited on and freed every
 * chunk (each a few allocations, locks and a futex wait that the system
 * clock then checks again).  Such a sleep cannot be unscheduled: a stop or a
 * pause waits for it, at most DIRECT_SLEEP_MAX.  Any other clock (a
 * /dev/ptpN clock, another element's, a test clock) and a longer wait use a
 * clock entry, as before. */
static GstClockTime
wait_until_due (GstClockBridge * self, GstClock * clock, GstClockTime base,
    GstClockTime due)
{
  GstClockID id;
  GstClockReturn wait;
  GstClockTime target = base + due;

  if (self->sleep_clock >= 0 && clock == self->clock) {
    GstClockTime internal, external, num, denom, now;

    gst_clock_get_calibration (clock, &internal, &external, &num, &denom);
    now = gst_clock_get_time (clock);
    if (internal == external && num == denom
        && (target <= now || target - now <= DIRECT_SLEEP_MAX)) {
      struct timespec ts = {.tv_sec = (time_t) (target / GST_SECOND),
        .tv_nsec = (long) (target % GST_SECOND)
      };

      g_mutex_unlock (&self->lock);
      if (target > now)
        while (clock_nanosleep (self->sleep_clock, TIMER_ABSTIME, &ts,
                NULL) == EINTR);
      g_mutex_lock (&self->lock);
      if (self->task_stop || !self->playing)
        return GST_CLOCK_TIME_NONE;
      return gst_clock_get_time (clock);
    }
  }
  id = gst_clock_new_single_shot_id (clock, target);
  self->clock_id = id;
  g_mutex_unlock (&self->lock);
  wait = gst_clock_id_wait (id, NULL);
  g_mutex_lock (&self->lock);
  self->clock_id = NULL;
  gst_clock_id_unref (id);
  if (self->task_stop || wait == GST_CLOCK_UNSCHEDULED || !self->playing)
    return GST_CLOCK_TIME_NONE;
  return gst_clock_get_time (clock);
}

/* Reads the chunk from each core (and the fallback file) into a new
 * buffer through the failover mixer (under self->lock) and takes the
 * statistics after the read.  Without a backup and a fallback the main
 * core reads straight into the buffer and the mixer only measures.  The
 * output meter takes the chunk as it leaves: *level_end is the running time
 * at which a level interval ended in it, NONE when none did. */
static GstBuffer *
read_chunk (GstClockBridge * self, GstClockTime now, ClockBridgeStats * st,
    gboolean * input_active, gboolean * drained, FailoverReport * fr,
    GstClockTime * level_end)
{
  GstBuffer *buf;
  GstMapInfo map;
  FailoverSettings set;
  float *out, *main_out;
  gdouble t = running_seconds (self, now);
  gsize audio, backup_audio = 0;
  guint ch;

  GST_OBJECT_LOCK (self);
  ch = (guint) self->channels;
  set = self->failover_set;
  GST_OBJECT_UNLOCK (self);
  buf = NULL;
  if (self->pool == NULL
      || gst_buffer_pool_acquire_buffer (self->pool, &buf,
          NULL) != GST_FLOW_OK)
    buf = gst_buffer_new_allocate (NULL,
        (gsize) self->chunk_frames * ch * sizeof (float), NULL);
  gst_buffer_map (buf, &map, GST_MAP_WRITE);
  out = (float *) map.data;
  main_out = self->backup != NULL || self->fallback_map != NULL ?
      self->main_chunk : out;
  audio = clock_bridge_read (self->bridge, main_out, self->chunk_frames, t);
  if (self->backup)
    backup_audio = clock_bridge_read (self->backup, self->backup_chunk,
        self->chunk_frames, t);
  if (self->paced)
    g_cond_broadcast (&self->cond);     /* room for a paced write */
  failover_set_settings (self->failover, &set);
  failover_set_backup (self->failover, self->backup != NULL);
  fr->switched = failover_chunk (self->failover, main_out, audio,
      self->backup ? self->backup_chunk : NULL, backup_audio, out, &fr->sw);
  failover_status (self->failover, &fr->status);
  *level_end = GST_CLOCK_TIME_NONE;
  if (self->metering) {
    size_t end = 0;

    if (output_meter_add (&self->meter, out, self->chunk_frames, &end) > 0)
      *level_end = self->origin + gst_util_uint64_scale (self->frames_out +
          end, GST_SECOND, RATE);
  }
  gst_buffer_unmap (buf, &map);
  /* the output ends when main has played out, and the backup too when it
   * had input */
  *drained = self->eos_in && clock_bridge_drained (self->bridge)
      && (self->backup == NULL
      || !GST_CLOCK_TIME_IS_VALID (self->backup_last_input)
      || (self->backup_eos && clock_bridge_drained (self->backup)));
  clock_bridge_stats (self->bridge, st);
  *input_active = GST_CLOCK_TIME_IS_VALID (self->last_input)
      && now < self->last_input + INPUT_ACTIVE_WINDOW;
  return buf;
}

/* The `level` message of the interval that ended at `end` (running time),
 * with the fields of GStreamer's level element that its readers use: the
 * interval's times, and rms and peak per channel in dB (meter.h). */
static void
post_level (GstClockBridge * self, GstClockTime end)
{
  GstClockTime duration = gst_util_uint64_scale (self->meter.interval,
      GST_SECOND, RATE);
  GstClockTime start = end > duration ? end - duration : 0;
  GValueArray *rms, *peak;
  GValue v = G_VALUE_INIT;
  GstStructure *s;

  G_GNUC_BEGIN_IGNORE_DEPRECATIONS;
  rms = g_value_array_new (self->meter.channels);
  peak = g_value_array_new (self->meter.channels);
  g_value_init (&v, G_TYPE_DOUBLE);
  for (unsigned c = 0; c < self->meter.channels; c++) {
    g_value_set_double (&v, self->meter.rms_db[c]);
    g_value_array_append (rms, &v);
    g_value_set_double (&v, self->meter.peak_db[c]);
    g_value_array_append (peak, &v);
  }
  g_value_unset (&v);
  s = gst_structure_new ("level",
      "endtime", G_TYPE_UINT64, (guint64) end,
      "timestamp", G_TYPE_UINT64, (guint64) start,
      "stream-time", G_TYPE_UINT64, (guint64) start,
      "running-time", G_TYPE_UINT64, (guint64) start,
      "duration", G_TYPE_UINT64, (guint64) duration, NULL);
  g_value_init (&v, g_value_array_get_type ());
  g_value_take_boxed (&v, rms);
  gst_structure_take_value (s, "rms", &v);
  g_value_init (&v, g_value_array_get_type ());
  g_value_take_boxed (&v, peak);
  gst_structure_take_value (s, "peak", &v);
  G_GNUC_END_IGNORE_DEPRECATIONS;
  gst_element_post_message (GST_ELEMENT (self),
      gst_message_new_element (GST_OBJECT (self), s));
}

/* Stamps and pushes the chunk, posts the messages when an interval is
 * complete, and ends the task after the drain or on a flow error. */
static void
push_chunk (GstClockBridge * self, GstBuffer * buf, const Chunk * c,
    const ClockBridgeStats * st, gboolean input_active, gboolean drained,
    const FailoverReport * fr, GstClockTime level_end)
{
  GstFlowReturn flow;
  gboolean post;

  GST_BUFFER_PTS (buf) = c->pts;
  GST_BUFFER_DURATION (buf) = c->end - c->pts;
  GST_BUFFER_OFFSET (buf) = self->frames_out;
  GST_BUFFER_OFFSET_END (buf) = self->frames_out + self->chunk_frames;
  if (self->frames_out == 0)
    GST_BUFFER_FLAG_SET (buf, GST_BUFFER_FLAG_DISCONT);
  self->frames_out += self->chunk_frames;
  post = self->frames_out >= self->next_message;
  if (post)
    self->next_message += self->interval_frames;

  flow = gst_pad_push (self->srcpad, buf);
  if (fr->switched)
    post_failover (self, &fr->sw, c->pts);
  if (GST_CLOCK_TIME_IS_VALID (level_end))
    post_level (self, level_end);
  if (post)
    post_stats (self, st, input_active, c->end, c->downstream, &fr->status);

  g_mutex_lock (&self->lock);
  self->src_flow = flow;
  if (self->paced && flow != GST_FLOW_OK)
    g_cond_broadcast (&self->cond);     /* a paced write stops waiting */
  g_mutex_unlock (&self->lock);

  if (flow == GST_FLOW_OK && drained) {
    GST_INFO_OBJECT (self, "input ended and the FIFO is empty: EOS");
    gst_pad_push_event (self->srcpad, gst_event_new_eos ());
    stop_task (self);
  } else if (flow != GST_FLOW_OK) {
    GST_INFO_OBJECT (self, "push: %s", gst_flow_get_name (flow));
    if (flow == GST_FLOW_NOT_LINKED || flow < GST_FLOW_EOS) {
      GST_ELEMENT_FLOW_ERROR (self, flow);
      gst_pad_push_event (self->srcpad, gst_event_new_eos ());
    }
    stop_task (self);
  }
}

/* The output task: one chunk per iteration, due, read, push. */
static void
gst_clock_bridge_loop (GstPad * pad)
{
  GstClockBridge *self = GST_CLOCK_BRIDGE (GST_PAD_PARENT (pad));
  GstClock *clock;
  GstClockTime base_time, now;
  GstBuffer *buf;
  ClockBridgeStats st;
  gboolean drained, input_active;
  FailoverReport fr;
  GstClockTime level_end;
  Chunk c;

  if (!self->sent_head) {
    /* the task (and the graph after it, down to the sink, in this thread)
     * runs on a deadline of LATENCY_MARGIN after each chunk */
    self->output_rt = ask_realtime (self, OUTPUT_RT_PRIORITY, "output");
    push_head (self);
    self->sent_head = TRUE;
  } else {
    self->output_rt = keep_realtime (self, &self->output_guard,
        self->output_rt, OUTPUT_RT_PRIORITY, "output");
  }

  g_mutex_lock (&self->lock);
  while (!self->playing && !self->task_stop)
    g_cond_wait (&self->cond, &self->lock);
  if (self->task_stop) {
    g_mutex_unlock (&self->lock);
    stop_task (self);
    return;
  }
  clock = gst_element_get_clock (GST_ELEMENT (self));
  if (clock == NULL) {
    g_mutex_unlock (&self->lock);
    GST_ELEMENT_ERROR (self, CORE, CLOCK, (NULL), ("PLAYING without a clock"));
    stop_task (self);
    return;
  }
  base_time = gst_element_get_base_time (GST_ELEMENT (self));
  if (!self->have_origin) {
    now = gst_clock_get_time (clock);
    self->origin = now > base_time ? now - base_time : 0;
    self->have_origin = TRUE;
  }
  c = next_chunk (self);
  now = wait_until_due (self, clock, base_time, c.due);
  gst_object_unref (clock);
  if (!GST_CLOCK_TIME_IS_VALID (now)) {
    g_mutex_unlock (&self->lock);
    return;
  }
  buf = read_chunk (self, now, &st, &input_active, &drained, &fr,
      &level_end);
  g_mutex_unlock (&self->lock);
  push_chunk (self, buf, &c, &st, input_active, drained, &fr, level_end);
}

static gboolean
gst_clock_bridge_src_activate_mode (GstPad * pad, GstObject * parent,
    GstPadMode mode, gboolean active)
{
  GstClockBridge *self = GST_CLOCK_BRIDGE (parent);

  if (mode != GST_PAD_MODE_PUSH)
    return FALSE;
  if (active) {
    g_mutex_lock (&self->lock);
    self->task_stop = FALSE;
    g_mutex_unlock (&self->lock);
    return gst_pad_start_task (pad, (GstTaskFunction) gst_clock_bridge_loop,
        pad, NULL);
  }
  g_mutex_lock (&self->lock);
  self->task_stop = TRUE;
  if (self->clock_id)
    gst_clock_id_unschedule (self->clock_id);
  g_cond_broadcast (&self->cond);
  g_mutex_unlock (&self->lock);
  return gst_pad_stop_task (pad);
}

static GstClock *
gst_clock_bridge_provide_clock (GstElement * element)
{
  GstClockBridge *self = GST_CLOCK_BRIDGE (element);
  GstClock *clock = NULL;

  GST_OBJECT_LOCK (self);
  if (self->clock)
    clock = gst_object_ref (self->clock);
  GST_OBJECT_UNLOCK (self);
  return clock;
}

/* NULL->READY: refused settings fail here; the provided clock is made */
static gboolean
open_clock (GstClockBridge * self)
{
  gchar *source, *error;
  GstClock *clock;
  GError *err = NULL;

  GST_OBJECT_LOCK (self);
  source = g_strdup (self->clock_source);
  error = g_strdup (self->settings_error);
  GST_OBJECT_UNLOCK (self);

  if (error) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS, ("%s", error), (NULL));
    g_free (error);
    g_free (source);
    return FALSE;
  }
  if (strcmp (source, "tai") == 0 || strcmp (source, "realtime") == 0) {
    clock = g_object_new (GST_TYPE_SYSTEM_CLOCK, "name", "clockbridge-clock",
        "clock-type", strcmp (source, "tai") == 0 ? GST_CLOCK_TYPE_TAI :
        GST_CLOCK_TYPE_REALTIME, NULL);
    gst_object_ref_sink (clock);
  } else {
    clock = phc_clock_new_slaved (source, &err);
    if (clock == NULL) {
      GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ,
          ("clock-source %s: %s", source, err->message), (NULL));
      g_clear_error (&err);
      g_free (source);
      return FALSE;
    }
  }
  GST_OBJECT_LOCK (self);
  gst_object_replace ((GstObject **) & self->clock, GST_OBJECT (clock));
  self->sleep_clock = strcmp (source, "tai") == 0 ? CLOCK_TAI :
      strcmp (source, "realtime") == 0 ? CLOCK_REALTIME : (clockid_t) - 1;
  GST_OBJECT_UNLOCK (self);
  gst_object_unref (clock);
  g_free (source);
  return TRUE;
}

/* the fallback file, mapped: F32LE interleaved, `channels` channels, at
 * least MIN_FALLBACK_FRAMES; an element error naming the file otherwise */
static GMappedFile *
map_fallback (GstClockBridge * self, const gchar * path, gint channels)
{
  GError *err = NULL;
  GMappedFile *map;
  gsize size, frame = sizeof (float) * (gsize) channels;

#if G_BYTE_ORDER != G_LITTLE_ENDIAN
  GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
      ("fallback-file needs a little-endian host"), (NULL));
  return NULL;
#endif
  map = g_mapped_file_new (path, FALSE, &err);
  if (map == NULL) {
    GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ,
        ("fallback-file %s: %s", path, err->message), (NULL));
    g_clear_error (&err);
    return NULL;
  }
  size = g_mapped_file_get_length (map);
  if (size % frame != 0 || size / frame < MIN_FALLBACK_FRAMES) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("fallback-file %s: %" G_GSIZE_FORMAT " bytes is not raw F32LE "
            "audio of %d channels at 48000 Hz, at least 0.1 s (a multiple "
            "of %" G_GSIZE_FORMAT " bytes, at least %" G_GSIZE_FORMAT ")",
            path, size, channels, frame, frame * MIN_FALLBACK_FRAMES),
        (NULL));
    g_mapped_file_unref (map);
    return NULL;
  }
  return map;
}

/* the backup pad's core, under self->lock */
static void
make_backup_core (GstClockBridge * self, gint channels, guint64 jitter)
{
  clock_bridge_free (self->backup);
  self->backup = clock_bridge_new ((unsigned) channels, RATE,
      (double) jitter / GST_SECOND, FALSE);
  if (self->backup != NULL)     /* jitter-max is set before READY */
    clock_bridge_set_ceiling (self->backup,
        (double) self->jitter_max / GST_SECOND);
  self->backup_flushing = FALSE;
  self->backup_eos = FALSE;
  self->backup_last_input = GST_CLOCK_TIME_NONE;
}

/* the backup core, the mixer's buffers and the fallback file */
static gboolean
make_failover (GstClockBridge * self, gint channels, guint64 jitter)
{
  gchar *path;
  GMappedFile *map = NULL;
  Failover *f;
  gsize frames = self->chunk_frames * (gsize) channels;

  GST_OBJECT_LOCK (self);
  path = g_strdup (self->fallback_file);
  GST_OBJECT_UNLOCK (self);
  if (path[0] != '\0') {
    map = map_fallback (self, path, channels);
    if (map == NULL) {
      g_free (path);
      return FALSE;
    }
  }
  g_free (path);
  f = failover_new ((unsigned) channels, RATE, self->chunk_frames,
      (size_t) llround (CLOCK_BRIDGE_FADE_S * RATE));
  if (f == NULL) {
    if (map)
      g_mapped_file_unref (map);
    GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT, (NULL),
        ("out of memory for the failover"));
    return FALSE;
  }
  if (map)
    failover_set_fallback (f, (const float *) (gpointer)
        g_mapped_file_get_contents (map), g_mapped_file_get_length (map) /
        (sizeof (float) * (gsize) channels));

  g_mutex_lock (&self->lock);
  failover_free (self->failover);
  self->failover = f;
  if (self->fallback_map)
    g_mapped_file_unref (self->fallback_map);
  self->fallback_map = map;
  g_free (self->main_chunk);
  g_free (self->backup_chunk);
  self->main_chunk = g_new0 (float, frames);
  self->backup_chunk = g_new0 (float, frames);
  clock_bridge_free (self->backup);
  self->backup = NULL;
  if (self->backuppad)
    make_backup_core (self, channels, jitter);
  failover_set_backup (f, self->backup != NULL);
  if (self->backuppad && self->backup == NULL) {
    g_mutex_unlock (&self->lock);
    GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT, (NULL),
        ("out of memory for the backup FIFO"));
    return FALSE;
  }
  g_mutex_unlock (&self->lock);
  return TRUE;
}

/* PAUSED->READY: the cores, the mixer and the file go */
static void
free_bridge (GstClockBridge * self)
{
  g_mutex_lock (&self->lock);
  clock_bridge_free (self->bridge);
  self->bridge = NULL;
  clock_bridge_free (self->backup);
  self->backup = NULL;
  failover_free (self->failover);
  self->failover = NULL;
  g_free (self->main_chunk);
  g_free (self->backup_chunk);
  self->main_chunk = self->backup_chunk = NULL;
  if (self->fallback_map)
    g_mapped_file_unref (self->fallback_map);
  self->fallback_map = NULL;
  g_mutex_unlock (&self->lock);
  if (self->pool) {
    gst_buffer_pool_set_active (self->pool, FALSE);
    gst_object_unref (self->pool);
    self->pool = NULL;
  }
}

/* the pool of the output's chunks: 4 made now (one in the graph, one
 * being read, two to spare), more only if the graph after the bridge ever
 * holds more; without it (refused config) each chunk is allocated */
static void
make_pool (GstClockBridge * self, gint channels)
{
  GstBufferPool *pool = gst_buffer_pool_new ();
  GstStructure *config = gst_buffer_pool_get_config (pool);
  GstCaps *caps = fixed_caps (self);

  gst_buffer_pool_config_set_params (config, caps,
      (guint) ((gsize) self->chunk_frames * channels * sizeof (float)), 4, 0);
  gst_caps_unref (caps);
  if (!gst_buffer_pool_set_config (pool, config)
      || !gst_buffer_pool_set_active (pool, TRUE)) {
    GST_INFO_OBJECT (self, "no buffer pool: each chunk is allocated");
    gst_object_unref (pool);
    pool = NULL;
  }
  if (self->pool) {
    gst_buffer_pool_set_active (self->pool, FALSE);
    gst_object_unref (self->pool);
  }
  self->pool = pool;
}

static gboolean
make_bridge (GstClockBridge * self)
{
  guint64 jitter, chunk, interval, meter_interval;
  gint channels;
  gboolean paced;

  GST_OBJECT_LOCK (self);
  paced = self->pace_input;
  jitter = self->jitter;
  chunk = self->chunk;
  interval = self->interval;
  meter_interval = self->meter_interval;
  channels = self->channels;
  GST_OBJECT_UNLOCK (self);

  g_mutex_lock (&self->lock);
  clock_bridge_free (self->bridge);
  self->bridge = clock_bridge_new ((unsigned) channels, RATE,
      (double) jitter / GST_SECOND, paced);
  if (self->bridge != NULL)
    clock_bridge_set_ceiling (self->bridge,
        (double) self->jitter_max / GST_SECOND);
  self->paced = paced;
  self->playing = FALSE;
  self->sink_flushing = FALSE;
  self->eos_in = FALSE;
  self->last_input = GST_CLOCK_TIME_NONE;
  self->src_flow = GST_FLOW_OK;
  self->pipeline_latency = GST_CLOCK_TIME_NONE;
  g_mutex_unlock (&self->lock);

  self->sent_head = FALSE;
  self->input_rt_tried = FALSE;
  self->backup_rt_tried = FALSE;
  self->input_rt = self->output_rt = FALSE;
  memset (&self->output_guard, 0, sizeof self->output_guard);
  memset (&self->input_guard, 0, sizeof self->input_guard);
  memset (&self->backup_guard, 0, sizeof self->backup_guard);
  self->have_origin = FALSE;
  self->frames_out = 0;
  self->chunk_frames = (guint) gst_util_uint64_scale (chunk, RATE, GST_SECOND);
  self->interval_frames = MAX (1, gst_util_uint64_scale (interval, RATE,
          GST_SECOND));
  self->next_message = self->interval_frames;
  self->metering = meter_interval > 0 && output_meter_init (&self->meter,
      (unsigned) channels, MAX (1, gst_util_uint64_scale (meter_interval,
              RATE, GST_SECOND))) == 0;
  make_pool (self, channels);
  if (self->bridge == NULL) {
    GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT, (NULL),
        ("out of memory for the FIFO"));
    return FALSE;
  }
  if (!make_failover (self, channels, jitter)) {
    free_bridge (self);
    return FALSE;
  }
  return TRUE;
}

static GstPad *
gst_clock_bridge_request_new_pad (GstElement * element,
    GstPadTemplate * templ, const gchar * name, const GstCaps * caps)
{
  GstClockBridge *self = GST_CLOCK_BRIDGE (element);
  GstPad *pad;
  guint64 jitter;
  gint channels;

  if (name != NULL && strcmp (name, "backup") != 0)
    return NULL;
  GST_OBJECT_LOCK (self);
  jitter = self->jitter;
  channels = self->channels;
  GST_OBJECT_UNLOCK (self);

  pad = gst_pad_new_from_static_template (&backup_template, "backup");
  gst_pad_set_chain_function (pad,
      GST_DEBUG_FUNCPTR (gst_clock_bridge_chain));
  gst_pad_set_event_function (pad,
      GST_DEBUG_FUNCPTR (gst_clock_bridge_sink_event));
  gst_pad_set_query_function (pad,
      GST_DEBUG_FUNCPTR (gst_clock_bridge_sink_query));
  gst_pad_set_iterate_internal_links_function (pad,
      GST_DEBUG_FUNCPTR (gst_clock_bridge_no_links));
  g_mutex_lock (&self->lock);
  if (self->backuppad != NULL) {
    g_mutex_unlock (&self->lock);
    gst_object_unref (gst_object_ref_sink (pad));
    GST_WARNING_OBJECT (self, "the backup pad exists already");
    return NULL;
  }
  self->backuppad = pad;
  /* already PAUSED or PLAYING: its core now */
  if (self->bridge != NULL)
    make_backup_core (self, channels, jitter);
  g_mutex_unlock (&self->lock);
  /* activated by add_pad when the element is PAUSED or PLAYING */
  gst_element_add_pad (element, pad);
  return pad;
}

static void
gst_clock_bridge_release_pad (GstElement * element, GstPad * pad)
{
  GstClockBridge *self = GST_CLOCK_BRIDGE (element);

  g_mutex_lock (&self->lock);
  if (pad != self->backuppad) {
    g_mutex_unlock (&self->lock);
    return;
  }
  self->backuppad = NULL;
  clock_bridge_free (self->backup);
  self->backup = NULL;
  g_mutex_unlock (&self->lock);
  gst_pad_set_active (pad, FALSE);
  gst_element_remove_pad (element, pad);
}

static GstStateChangeReturn
gst_clock_bridge_change_state (GstElement * element, GstStateChange transition)
{
  GstClockBridge *self = GST_CLOCK_BRIDGE (element);
  GstStateChangeReturn ret;

  switch (transition) {
    case GST_STATE_CHANGE_NULL_TO_READY:
      if (!open_clock (self))
        return GST_STATE_CHANGE_FAILURE;
      break;
    case GST_STATE_CHANGE_READY_TO_PAUSED:
      if (!make_bridge (self))
        return GST_STATE_CHANGE_FAILURE;
      break;
    case GST_STATE_CHANGE_PAUSED_TO_PLAYING:
      g_mutex_lock (&self->lock);
      self->playing = TRUE;
      g_cond_broadcast (&self->cond);
      g_mutex_unlock (&self->lock);
      break;
    case GST_STATE_CHANGE_PLAYING_TO_PAUSED:
      g_mutex_lock (&self->lock);
      self->playing = FALSE;
      if (self->clock_id)
        gst_clock_id_unschedule (self->clock_id);
      g_mutex_unlock (&self->lock);
      break;
    default:
      break;
  }

  ret = GST_ELEMENT_CLASS (gst_clock_bridge_parent_class)->change_state
      (element, transition);
  if (ret == GST_STATE_CHANGE_FAILURE)
    return ret;

  switch (transition) {
    case GST_STATE_CHANGE_READY_TO_PAUSED:
    case GST_STATE_CHANGE_PLAYING_TO_PAUSED:
      ret = GST_STATE_CHANGE_NO_PREROLL;        /* a live source */
      break;
    case GST_STATE_CHANGE_PAUSED_TO_READY:
      free_bridge (self);
      break;
    case GST_STATE_CHANGE_READY_TO_NULL:
      GST_OBJECT_LOCK (self);
      gst_object_replace ((GstObject **) & self->clock, NULL);
      GST_OBJECT_UNLOCK (self);
      break;
    default:
      break;
  }
  return ret;
}
