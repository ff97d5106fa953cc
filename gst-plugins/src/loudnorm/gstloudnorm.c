/* loudnorm: EBU R128 loudness normaliser with a look-ahead true-peak limiter.
 *
 * Measures its input and its output with the lean BS.1770-4 meter of
 * meter.c, drives a causal gain law every 100 ms (gainlaw.c), ramps the gain
 * per sample and limits the true peak with a 5 ms look-ahead (limiter.c).
 *
 * Latency: the output is the input delayed by the limiter's delay line
 * (look-ahead + interpolator delay, 245 frames at 48 kHz = 5.1 ms).
 * Buffers keep their timestamps (the content is late by the latency, which
 * the element adds to the LATENCY query, as look-ahead limiters do); the
 * first `latency` frames of the output are silence and the last `latency`
 * frames of the input are pushed in an extra buffer before EOS.
 *
 * Example:
 *   gst-launch-1.0 -m filesrc location=in.wav ! wavparse ! audioconvert ! \
 *       loudnorm target=-23 true-peak=-1 ! audioconvert ! autoaudiosink
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstloudnorm.h"

#include <math.h>
#include <string.h>

GST_DEBUG_CATEGORY_STATIC (loudnorm_debug);
#define GST_CAT_DEFAULT loudnorm_debug

#define LOOKAHEAD_S 0.005
#define RELEASE_S 0.08
#define CEILING_MARGIN_DB 0.1
#define IN_WINDOW_BLOCKS 300    /* 30 s reference window */
#define OUT_WINDOW_BLOCKS 600   /* 60 s output long-term window */
#define RAMP_FRAMES 64
#define FLOOR_DB (-120.0)

enum
{
  PROP_0,
  PROP_TARGET,
  PROP_TRUE_PEAK,
  PROP_MAX_GAIN,
  PROP_POST_MESSAGES,
  PROP_INTERVAL,
  PROP_RESET_MEASUREMENT,
};

enum
{
  RESET_IDLE,
  RESET_REQUESTED,
  RESET_RUNNING,
};

#define DEFAULT_TARGET (-23.0)
#define DEFAULT_TRUE_PEAK (-1.0)
#define DEFAULT_MAX_GAIN 20.0
#define DEFAULT_POST_MESSAGES TRUE
#define DEFAULT_INTERVAL (GST_SECOND)
#define MIN_INTERVAL (10 * GST_MSECOND)

#define CAPS_STR \
  "audio/x-raw, format = (string) " GST_AUDIO_NE (F32) ", " \
  "rate = (int) { 44100, 48000, 96000 }, channels = (int) [ 1, 8 ], " \
  "layout = (string) interleaved"

G_DEFINE_TYPE (GstLoudnorm, gst_loudnorm, GST_TYPE_AUDIO_FILTER);
GST_ELEMENT_REGISTER_DEFINE (loudnorm, "loudnorm", GST_RANK_NONE,
    GST_TYPE_LOUDNORM);

static void gst_loudnorm_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec);
static void gst_loudnorm_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec);
static void gst_loudnorm_finalize (GObject * object);
static gboolean gst_loudnorm_setup (GstAudioFilter * filter,
    const GstAudioInfo * info);
static GstFlowReturn gst_loudnorm_transform_ip (GstBaseTransform * trans,
    GstBuffer * buf);
static gboolean gst_loudnorm_sink_event (GstBaseTransform * trans,
    GstEvent * event);
static gboolean gst_loudnorm_query (GstBaseTransform * trans,
    GstPadDirection direction, GstQuery * query);
static gboolean gst_loudnorm_start (GstBaseTransform * trans);
static gboolean gst_loudnorm_stop (GstBaseTransform * trans);

static void
gst_loudnorm_class_init (GstLoudnormClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS (klass);
  GstAudioFilterClass *filter_class = GST_AUDIO_FILTER_CLASS (klass);
  GstCaps *caps;

  GST_DEBUG_CATEGORY_INIT (loudnorm_debug, "loudnorm", 0,
      "EBU R128 loudness normaliser");

  gobject_class->set_property = gst_loudnorm_set_property;
  gobject_class->get_property = gst_loudnorm_get_property;
  gobject_class->finalize = gst_loudnorm_finalize;

  g_object_class_install_property (gobject_class, PROP_TARGET,
      g_param_spec_double ("target", "Target",
          "Target integrated loudness (LUFS)", -70.0, -5.0, DEFAULT_TARGET,
          G_PARAM_READWRITE | GST_PARAM_CONTROLLABLE | GST_PARAM_MUTABLE_PLAYING |
          G_PARAM_STATIC_STRINGS));
  g_object_class_install_property (gobject_class, PROP_TRUE_PEAK,
      g_param_spec_double ("true-peak", "True peak",
          "True-peak ceiling of the output (dBTP)", -9.0, 0.0,
          DEFAULT_TRUE_PEAK,
          G_PARAM_READWRITE | GST_PARAM_CONTROLLABLE | GST_PARAM_MUTABLE_PLAYING |
          G_PARAM_STATIC_STRINGS));
  g_object_class_install_property (gobject_class, PROP_MAX_GAIN,
      g_param_spec_double ("max-gain", "Maximum gain",
          "Largest gain applied (dB)", 0.0, 40.0, DEFAULT_MAX_GAIN,
          G_PARAM_READWRITE | GST_PARAM_CONTROLLABLE | GST_PARAM_MUTABLE_PLAYING |
          G_PARAM_STATIC_STRINGS));
  g_object_class_install_property (gobject_class, PROP_POST_MESSAGES,
      g_param_spec_boolean ("post-messages", "Post messages",
          "Post a 'loudnorm' element message every interval and at EOS",
          DEFAULT_POST_MESSAGES,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS));
  g_object_class_install_property (gobject_class, PROP_INTERVAL,
      g_param_spec_uint64 ("interval", "Interval",
          "Interval of stream time between messages (ns)", MIN_INTERVAL,
          G_MAXUINT64, DEFAULT_INTERVAL,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS));
  g_object_class_install_property (gobject_class, PROP_RESET_MEASUREMENT,
      g_param_spec_boolean ("reset-measurement", "Reset measurement",
          "Write true to restart the programme measurement of input and "
          "output (integrated loudness, loudness range, true peak) at the "
          "next 100 ms step; the gain, momentary and short-term values are "
          "not touched. Reads true until the reset is done; false does "
          "nothing", FALSE,
          G_PARAM_READWRITE | GST_PARAM_MUTABLE_PLAYING |
          G_PARAM_STATIC_STRINGS));

  gst_element_class_set_static_metadata (element_class,
      "EBU R128 loudness normaliser", "Filter/Effect/Audio",
      "Measures loudness (ITU-R BS.1770-4) and normalises it causally to a "
      "target with a look-ahead true-peak limiter",
      "Audio Pipeline Engine");

  caps = gst_caps_from_string (CAPS_STR);
  gst_audio_filter_class_add_pad_templates (filter_class, caps);
  gst_caps_unref (caps);

  trans_class->transform_ip = GST_DEBUG_FUNCPTR (gst_loudnorm_transform_ip);
  trans_class->sink_event = GST_DEBUG_FUNCPTR (gst_loudnorm_sink_event);
  trans_class->query = GST_DEBUG_FUNCPTR (gst_loudnorm_query);
  trans_class->start = GST_DEBUG_FUNCPTR (gst_loudnorm_start);
  trans_class->stop = GST_DEBUG_FUNCPTR (gst_loudnorm_stop);
  trans_class->passthrough_on_same_caps = FALSE;
  filter_class->setup = GST_DEBUG_FUNCPTR (gst_loudnorm_setup);
}

static void
gst_loudnorm_init (GstLoudnorm * self)
{
  self->target = DEFAULT_TARGET;
  self->true_peak = DEFAULT_TRUE_PEAK;
  self->max_gain = DEFAULT_MAX_GAIN;
  self->post_messages = DEFAULT_POST_MESSAGES;
  self->interval = DEFAULT_INTERVAL;
  gst_base_transform_set_in_place (GST_BASE_TRANSFORM (self), TRUE);
  gst_base_transform_set_gap_aware (GST_BASE_TRANSFORM (self), FALSE);
}

static void
free_dsp (GstLoudnorm * self)
{
  ln_meter_free (self->in_meter);
  ln_meter_free (self->out_meter);
  ln_limiter_free (self->limiter);
  self->in_meter = self->out_meter = NULL;
  self->limiter = NULL;
}

static void
gst_loudnorm_finalize (GObject * object)
{
  free_dsp (GST_LOUDNORM (object));
  G_OBJECT_CLASS (gst_loudnorm_parent_class)->finalize (object);
}

static void
gst_loudnorm_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstLoudnorm *self = GST_LOUDNORM (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_TARGET:
      self->target = g_value_get_double (value);
      break;
    case PROP_TRUE_PEAK:
      self->true_peak = g_value_get_double (value);
      break;
    case PROP_MAX_GAIN:
      self->max_gain = g_value_get_double (value);
      break;
    case PROP_POST_MESSAGES:
      self->post_messages = g_value_get_boolean (value);
      break;
    case PROP_INTERVAL:
      self->interval = g_value_get_uint64 (value);
      break;
    case PROP_RESET_MEASUREMENT:
      /* carried out by the streaming thread at its next 100 ms step; a
       * request while one runs is served at the step after it */
      if (g_value_get_boolean (value))
        g_atomic_int_set (&self->reset_state, RESET_REQUESTED);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_loudnorm_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec)
{
  GstLoudnorm *self = GST_LOUDNORM (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_TARGET:
      g_value_set_double (value, self->target);
      break;
    case PROP_TRUE_PEAK:
      g_value_set_double (value, self->true_peak);
      break;
    case PROP_MAX_GAIN:
      g_value_set_double (value, self->max_gain);
      break;
    case PROP_POST_MESSAGES:
      g_value_set_boolean (value, self->post_messages);
      break;
    case PROP_INTERVAL:
      g_value_set_uint64 (value, self->interval);
      break;
    case PROP_RESET_MEASUREMENT:
      g_value_set_boolean (value,
          g_atomic_int_get (&self->reset_state) != RESET_IDLE);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

/* Streaming state back to the start (new stream, flush). */
static void
reset_state (GstLoudnorm * self)
{
  LnGainParams gp;

  if (self->in_meter)
    ln_meter_reset (self->in_meter);
  if (self->out_meter)
    ln_meter_reset (self->out_meter);
  if (self->limiter)
    ln_limiter_reset (self->limiter);
  GST_OBJECT_LOCK (self);
  ln_gain_defaults (&gp);
  gp.target = self->target;
  gp.max_gain = self->max_gain;
  self->applied_target = self->target;
  self->applied_max_gain = self->max_gain;
  self->applied_ceiling = self->true_peak;
  GST_OBJECT_UNLOCK (self);
  ln_gain_init (&self->gain, &gp);
  if (self->limiter)
    ln_limiter_set_ceiling (self->limiter, self->applied_ceiling,
        CEILING_MARGIN_DB);
  self->cur_lin = 1.0;
  self->target_moved = FALSE;
  self->frames_in = 0;
  self->msg_frames = 0;
  self->msg_ts = GST_CLOCK_TIME_NONE;
  self->next_ts = GST_CLOCK_TIME_NONE;
  self->need_drain = FALSE;
  /* everything starts again: a pending measurement reset is served */
  self->out_reset_in = -1;
  g_atomic_int_set (&self->reset_state, RESET_IDLE);
}

static gboolean
gst_loudnorm_setup (GstAudioFilter * filter, const GstAudioInfo * info)
{
  GstLoudnorm *self = GST_LOUDNORM (filter);
  guint ch = GST_AUDIO_INFO_CHANNELS (info);
  guint rate = GST_AUDIO_INFO_RATE (info);
  gdouble w[64];
  LnMeterConfig cfg;

  if (ch == 0 || ch > 8 || GST_AUDIO_INFO_FORMAT (info) != GST_AUDIO_FORMAT_F32)
    return FALSE;

  /* BS.1770 channel weights: 1.0 front, 1.41 surround, 0 LFE */
  for (guint c = 0; c < ch; c++) {
    w[c] = 1.0;
    if (ch <= 2 || GST_AUDIO_INFO_IS_UNPOSITIONED (info))
      continue;
    switch (GST_AUDIO_INFO_POSITION (info, c)) {
      case GST_AUDIO_CHANNEL_POSITION_LFE1:
      case GST_AUDIO_CHANNEL_POSITION_LFE2:
        w[c] = 0.0;
        break;
      case GST_AUDIO_CHANNEL_POSITION_REAR_LEFT:
      case GST_AUDIO_CHANNEL_POSITION_REAR_RIGHT:
      case GST_AUDIO_CHANNEL_POSITION_REAR_CENTER:
      case GST_AUDIO_CHANNEL_POSITION_SIDE_LEFT:
      case GST_AUDIO_CHANNEL_POSITION_SIDE_RIGHT:
      case GST_AUDIO_CHANNEL_POSITION_SURROUND_LEFT:
      case GST_AUDIO_CHANNEL_POSITION_SURROUND_RIGHT:
        w[c] = 1.41;
        break;
      default:
        break;
    }
  }

  free_dsp (self);
  self->rate = rate;
  self->channels = ch;
  cfg.rate = rate;
  cfg.channels = ch;
  cfg.weights = w;
  cfg.true_peak = 1;
  cfg.lra_step = 10;
  cfg.window_blocks = IN_WINDOW_BLOCKS;
  self->in_meter = ln_meter_new (&cfg);
  cfg.window_blocks = OUT_WINDOW_BLOCKS;
  self->out_meter = ln_meter_new (&cfg);
  self->limiter = ln_limiter_new (ch, rate, LOOKAHEAD_S, RELEASE_S);
  if (!self->in_meter || !self->out_meter || !self->limiter) {
    free_dsp (self);
    return FALSE;
  }
  reset_state (self);
  GST_OBJECT_LOCK (self);
  self->latency = gst_util_uint64_scale_round (ln_limiter_delay
      (self->limiter), GST_SECOND, rate);
  GST_OBJECT_UNLOCK (self);
  GST_INFO_OBJECT (self, "%u Hz, %u channels, latency %u frames", rate, ch,
      ln_limiter_delay (self->limiter));
  return TRUE;
}

static gboolean
gst_loudnorm_start (GstBaseTransform * trans)
{
  reset_state (GST_LOUDNORM (trans));
  return TRUE;
}

static gboolean
gst_loudnorm_stop (GstBaseTransform * trans)
{
  return TRUE;
}

static gdouble
floor_db (gdouble v)
{
  return (isfinite (v) && v > FLOOR_DB) ? v : FLOOR_DB;
}

static gdouble
lin_to_db (gdouble v)
{
  return v > 0.0 ? floor_db (20.0 * log10 (v)) : FLOOR_DB;
}

static void
post_message (GstLoudnorm * self, GstClockTime ts, guint64 frames)
{
  GstBaseTransform *trans = GST_BASE_TRANSFORM (self);
  GstClockTime duration = gst_util_uint64_scale_round (frames, GST_SECOND,
      self->rate);
  GstClockTime running_time = GST_CLOCK_TIME_NONE, stream_time =
      GST_CLOCK_TIME_NONE;
  GstStructure *s;

  if (GST_CLOCK_TIME_IS_VALID (ts)) {
    running_time = gst_segment_to_running_time (&trans->segment,
        GST_FORMAT_TIME, ts);
    stream_time = gst_segment_to_stream_time (&trans->segment,
        GST_FORMAT_TIME, ts);
  }

  s = gst_structure_new ("loudnorm",
      "timestamp", G_TYPE_UINT64, (guint64) ts,
      "stream-time", G_TYPE_UINT64, (guint64) stream_time,
      "running-time", G_TYPE_UINT64, (guint64) running_time,
      "duration", G_TYPE_UINT64, (guint64) duration,
      "input-momentary", G_TYPE_DOUBLE,
      floor_db (ln_meter_momentary (self->in_meter)),
      "input-short-term", G_TYPE_DOUBLE,
      floor_db (ln_meter_short_term (self->in_meter)),
      "input-integrated", G_TYPE_DOUBLE,
      floor_db (ln_meter_integrated (self->in_meter)),
      "measured", G_TYPE_DOUBLE,
      ln_meter_measured_seconds (self->in_meter),
      "input-loudness-range", G_TYPE_DOUBLE,
      ln_meter_loudness_range (self->in_meter),
      "input-true-peak", G_TYPE_DOUBLE,
      lin_to_db (ln_meter_true_peak (self->in_meter)),
      "gain", G_TYPE_DOUBLE, 20.0 * log10 (self->cur_lin),
      "output-momentary", G_TYPE_DOUBLE,
      floor_db (ln_meter_momentary (self->out_meter)),
      "output-short-term", G_TYPE_DOUBLE,
      floor_db (ln_meter_short_term (self->out_meter)),
      "output-integrated", G_TYPE_DOUBLE,
      floor_db (ln_meter_integrated (self->out_meter)),
      "output-true-peak", G_TYPE_DOUBLE,
      lin_to_db (ln_meter_true_peak (self->out_meter)), NULL);

  gst_element_post_message (GST_ELEMENT (self),
      gst_message_new_element (GST_OBJECT (self), s));
}

/* Every 100 ms of input: the gain law. */
static void
gain_step (GstLoudnorm * self)
{
  LnMeter *in = self->in_meter;
  gdouble elapsed = (gdouble) ln_meter_frames (in) / self->rate;
  gdouble m = ln_meter_momentary (in);
  gdouble s = ln_meter_short_term (in);

  /* the windows are zero-padded until full: rescale to the audio seen */
  if (elapsed > 0.0 && elapsed < 3.0 && isfinite (s))
    s += 10.0 * log10 (3.0 / elapsed);
  if (elapsed > 0.0 && elapsed < 0.4 && isfinite (m))
    m += 10.0 * log10 (0.4 / elapsed);

  ln_gain_update (&self->gain, m, s, ln_meter_window (in),
      ln_meter_window_count (in) >= 30, ln_meter_window (self->out_meter),
      ln_meter_window_count (self->out_meter) >= 50);

  /* A new target while playing: the output's long-term window holds the
   * programme made for the old target, and the integral correction would
   * chase it (about +0.3 dB in 10 s, more over the 60 s window, after a
   * -23 -> -16 change). Once the gain has settled within 0.5 dB of the new
   * aim, the window starts again, so the correction only sees output made
   * for the new target (and waits for 5 s of it, as at the start). */
  if (self->target_moved
      && fabs (self->gain.desired - self->gain.current) < 0.5) {
    ln_meter_reset_window (self->out_meter);
    self->target_moved = FALSE;
  }
}

typedef double v4d __attribute__ ((vector_size (32)));
typedef float v4f __attribute__ ((vector_size (16)));
typedef int v4i __attribute__ ((vector_size (16)));

/* Frame i (0-based) of x gets the gain (float) (start + step * (i + 1)).
 * Stereo goes four frames at a time: the four gains in one vector of
 * doubles, each lane computed as the scalar loop computes it (no FMA in
 * either build of target_clones), so both paths give the same results. */
__attribute__ ((target_clones ("avx", "default")))
static void
apply_ramp (gfloat * x, guint n, guint ch, gdouble start, gdouble step)
{
  guint i = 0;

  if (ch == 2) {
    const v4d vstart = { start, start, start, start };
    const v4d vstep = { step, step, step, step };
    for (; i + 4 <= n; i += 4) {
      const v4d k = { (gdouble) (i + 1), (gdouble) (i + 2), (gdouble) (i + 3),
        (gdouble) (i + 4)
      };
      const v4f g = __builtin_convertvector (vstart + vstep * k, v4f);
      v4f a, b;
      memcpy (&a, x + 2 * i, sizeof a);
      memcpy (&b, x + 2 * i + 4, sizeof b);
      a *= __builtin_shuffle (g, (v4i) { 0, 0, 1, 1 });
      b *= __builtin_shuffle (g, (v4i) { 2, 2, 3, 3 });
      memcpy (x + 2 * i, &a, sizeof a);
      memcpy (x + 2 * i + 4, &b, sizeof b);
    }
  }
  for (; i < n; i++) {
    gfloat g = (gfloat) (start + step * (i + 1));
    for (guint c = 0; c < ch; c++)
      x[i * ch + c] *= g;
  }
}

/* Process n frames in place; is_input: they come from upstream (metered,
 * gained) rather than the zeros of the drain. */
static void
process_chunk (GstLoudnorm * self, gfloat * x, guint n)
{
  const guint ch = self->channels;
  guint steps = ln_meter_process (self->in_meter, x, n);
  gdouble g_db = ln_gain_advance (&self->gain, n, self->rate);
  gdouble end = pow (10.0, g_db / 20.0);
  gdouble start = self->cur_lin;

  if (start == end) {
    if (start != 1.0) {
      gfloat g = (gfloat) start;
      for (guint i = 0; i < n * ch; i++)
        x[i] *= g;
    }
  } else {
    apply_ramp (x, n, ch, start, (end - start) / n);
  }
  self->cur_lin = end;
  ln_limiter_process (self->limiter, x, n);
  ln_meter_process (self->out_meter, x, n);
  if (steps)
    gain_step (self);
}

static void
apply_properties (GstLoudnorm * self, gboolean * post, guint64 * interval)
{
  GST_OBJECT_LOCK (self);
  *post = self->post_messages;
  *interval = self->interval;
  if (self->target != self->applied_target)
    self->target_moved = TRUE;
  if (self->target != self->applied_target
      || self->max_gain != self->applied_max_gain) {
    self->gain.p.target = self->applied_target = self->target;
    self->gain.p.max_gain = self->applied_max_gain = self->max_gain;
  }
  if (self->true_peak != self->applied_ceiling) {
    self->applied_ceiling = self->true_peak;
    ln_limiter_set_ceiling (self->limiter, self->applied_ceiling,
        CEILING_MARGIN_DB);
  }
  GST_OBJECT_UNLOCK (self);
}

/* reset-measurement, at a chunk boundary.  The input measurement restarts
 * on a 100 ms step boundary of the input meter; the output's restarts once
 * the audio of that instant leaves the limiter's delay line (the first chunk
 * boundary at least `delay` frames later, at most 63 frames after), so both
 * describe the same programme.  Nothing else changes: the chunks are cut
 * as without a reset, so the output samples are the same. */
static void
measurement_reset_before (GstLoudnorm * self)
{
  if (self->out_reset_in >= 0
      || ln_meter_frames_to_step (self->in_meter) != (self->rate / 100) * 10
      || !g_atomic_int_compare_and_exchange (&self->reset_state,
          RESET_REQUESTED, RESET_RUNNING))
    return;
  GST_INFO_OBJECT (self, "input measurement restarted after %.3f s",
      ln_meter_measured_seconds (self->in_meter));
  ln_meter_reset_measurement (self->in_meter);
  self->out_reset_in = ln_limiter_delay (self->limiter);
}

static void
measurement_reset_after (GstLoudnorm * self, guint64 n)
{
  if (self->out_reset_in < 0)
    return;
  self->out_reset_in -= (gint64) MIN (n, (guint64) self->out_reset_in);
  if (self->out_reset_in > 0)
    return;
  ln_meter_reset_measurement (self->out_meter);
  self->out_reset_in = -1;
  /* fails when a new request came meanwhile: it stays requested */
  g_atomic_int_compare_and_exchange (&self->reset_state, RESET_RUNNING,
      RESET_IDLE);
  GST_INFO_OBJECT (self, "output measurement restarted");
}

static GstFlowReturn
gst_loudnorm_transform_ip (GstBaseTransform * trans, GstBuffer * buf)
{
  GstLoudnorm *self = GST_LOUDNORM (trans);
  GstMapInfo map;
  gboolean post;
  guint64 interval, interval_frames, frames, off = 0;
  GstClockTime ts;

  if (!self->limiter)
    return GST_FLOW_NOT_NEGOTIATED;

  if (GST_BUFFER_PTS_IS_VALID (buf))
    gst_object_sync_values (GST_OBJECT (self), GST_BUFFER_PTS (buf));
  apply_properties (self, &post, &interval);
  interval_frames = MAX (1, gst_util_uint64_scale_round (interval, self->rate,
          GST_SECOND));

  if (!gst_buffer_map (buf, &map, GST_MAP_READWRITE))
    return GST_FLOW_ERROR;
  frames = map.size / (sizeof (gfloat) * self->channels);
  ts = GST_BUFFER_PTS (buf);
  if (!GST_CLOCK_TIME_IS_VALID (ts) && GST_CLOCK_TIME_IS_VALID (self->next_ts))
    ts = self->next_ts;

  while (off < frames) {
    guint64 n = frames - off;
    n = MIN (n, RAMP_FRAMES);
    n = MIN (n, ln_meter_frames_to_step (self->in_meter));
    n = MIN (n, interval_frames - MIN (self->msg_frames, interval_frames - 1));

    if (self->msg_frames == 0) {
      self->msg_ts = GST_CLOCK_TIME_IS_VALID (ts) ? ts +
          gst_util_uint64_scale_round (off, GST_SECOND, self->rate) :
          GST_CLOCK_TIME_NONE;
    }
    measurement_reset_before (self);
    process_chunk (self, (gfloat *) map.data + off * self->channels, (guint) n);
    measurement_reset_after (self, n);
    off += n;
    self->msg_frames += n;
    if (self->msg_frames >= interval_frames) {
      if (post)
        post_message (self, self->msg_ts, self->msg_frames);
      self->msg_frames = 0;
    }
  }
  gst_buffer_unmap (buf, &map);

  self->frames_in += frames;
  self->need_drain = TRUE;
  if (GST_CLOCK_TIME_IS_VALID (ts))
    self->next_ts = ts + gst_util_uint64_scale_round (frames, GST_SECOND,
        self->rate);
  return GST_FLOW_OK;
}

/* EOS: push the samples still in the delay line, then the last message. */
static void
drain (GstLoudnorm * self)
{
  GstBaseTransform *trans = GST_BASE_TRANSFORM (self);
  guint d, ch;
  GstBuffer *buf;
  GstMapInfo map;
  gboolean post;
  guint64 interval;

  if (!self->limiter)
    return;
  apply_properties (self, &post, &interval);
  /* the last message covers the input frames since the previous one (none
   * if the stream ended on an interval boundary: then it is stamped at the
   * end of the input) */
  if (self->msg_frames == 0)
    self->msg_ts = self->next_ts;
  if (self->need_drain) {
    d = ln_limiter_delay (self->limiter);
    ch = self->channels;
    buf = gst_buffer_new_allocate (NULL, (gsize) d * ch * sizeof (gfloat),
        NULL);
    gst_buffer_map (buf, &map, GST_MAP_WRITE);
    memset (map.data, 0, map.size);
    ln_limiter_process (self->limiter, (gfloat *) map.data, d);
    if (self->out_reset_in >= 0 && self->out_reset_in < d) {
      /* the output measurement restarts inside the drained frames */
      guint k = (guint) self->out_reset_in;
      ln_meter_process (self->out_meter, (gfloat *) map.data, k);
      measurement_reset_after (self, k);
      ln_meter_process (self->out_meter, (gfloat *) map.data + k * ch, d - k);
    } else {
      ln_meter_process (self->out_meter, (gfloat *) map.data, d);
      measurement_reset_after (self, d);
    }
    gst_buffer_unmap (buf, &map);
    GST_BUFFER_PTS (buf) = self->next_ts;
    GST_BUFFER_DURATION (buf) =
        gst_util_uint64_scale_round (d, GST_SECOND, self->rate);
    if (GST_CLOCK_TIME_IS_VALID (self->next_ts)) {
      GST_BUFFER_OFFSET (buf) = gst_util_uint64_scale_round (self->next_ts,
          self->rate, GST_SECOND);
      self->next_ts += GST_BUFFER_DURATION (buf);
    }
    self->need_drain = FALSE;
    GST_DEBUG_OBJECT (self, "draining %u frames", d);
    gst_pad_push (GST_BASE_TRANSFORM_SRC_PAD (trans), buf);
  }
  if (post && (self->frames_in > 0))
    post_message (self, self->msg_ts, self->msg_frames);
  self->msg_frames = 0;
}

static gboolean
gst_loudnorm_sink_event (GstBaseTransform * trans, GstEvent * event)
{
  GstLoudnorm *self = GST_LOUDNORM (trans);

  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_EOS:
      drain (self);
      break;
    case GST_EVENT_FLUSH_STOP:
      reset_state (self);
      break;
    default:
      break;
  }
  return GST_BASE_TRANSFORM_CLASS (gst_loudnorm_parent_class)->sink_event
      (trans, event);
}

static gboolean
gst_loudnorm_query (GstBaseTransform * trans, GstPadDirection direction,
    GstQuery * query)
{
  GstLoudnorm *self = GST_LOUDNORM (trans);

  if (direction == GST_PAD_SRC && GST_QUERY_TYPE (query) == GST_QUERY_LATENCY) {
    gboolean live;
    GstClockTime min, max, ours = 0;

    if (!gst_pad_peer_query (GST_BASE_TRANSFORM_SINK_PAD (trans), query))
      return FALSE;
    gst_query_parse_latency (query, &live, &min, &max);
    GST_OBJECT_LOCK (self);
    ours = self->latency;
    GST_OBJECT_UNLOCK (self);
    min += ours;
    if (GST_CLOCK_TIME_IS_VALID (max))
      max += ours;
    GST_DEBUG_OBJECT (self, "latency: ours %" GST_TIME_FORMAT ", total min %"
        GST_TIME_FORMAT, GST_TIME_ARGS (ours), GST_TIME_ARGS (min));
    gst_query_set_latency (query, live, min, max);
    return TRUE;
  }
  return GST_BASE_TRANSFORM_CLASS (gst_loudnorm_parent_class)->query (trans,
      direction, query);
}
