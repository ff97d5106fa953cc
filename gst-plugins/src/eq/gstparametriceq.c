/* parametriceq: a cascade of RBJ peaking biquads (1 to 16 bands).
 *
 * Example:
 *   gst-launch-1.0 audiotestsrc ! audioconvert ! \
 *       parametriceq bands="100:4,1000:-3:2.5" ! autoaudiosink
 *
 * The "bands" property holds one freq:gain[:q] per band, comma separated
 * (grammar in bands.h, user documentation in docs/elements-parametriceq.md).
 * Structure after gst-plugins-good audiofx/audioamplify.c (GstAudioFilter,
 * in place, per-format process function) and equalizer/gstiirequalizer.c
 * (property written under the object lock, "new coefficients" flag picked
 * up once per buffer by the streaming thread). The DSP lives in biquad.c,
 * the bands parser in bands.c; neither uses GStreamer types.
 *
 * Threading: set_property parses the string and, when valid, stores the
 * bands and raises need_new_coefficients under the object lock. The
 * streaming thread takes a copy in before_transform (once per buffer),
 * designs the biquads for the current rate and hands them to the cascade,
 * which ramps its coefficients over RAMP_MS so a change while playing does
 * not click. When every gain is 0 (and any ramp towards that has finished)
 * the element goes into pass-through.
 */
#include <gst/gst.h>
#include <gst/base/gstbasetransform.h>
#include <gst/audio/audio.h>
#include <gst/audio/gstaudiofilter.h>

#include <string.h>

#include "biquad.h"
#include "bands.h"

GST_DEBUG_CATEGORY_STATIC (parametric_eq_debug);
#define GST_CAT_DEFAULT parametric_eq_debug

/* coefficient ramp length for changes while playing */
#define RAMP_MS 20
#define DEFAULT_BANDS "1000:0"

#define GST_TYPE_PARAMETRIC_EQ (gst_parametric_eq_get_type ())
G_DECLARE_FINAL_TYPE (GstParametricEq, gst_parametric_eq, GST, PARAMETRIC_EQ,
    GstAudioFilter);

typedef void (*GstParametricEqProcessFunc) (EqCascade * eq, gpointer data,
    guint frames);

struct _GstParametricEq
{
  GstAudioFilter parent;

  /* protected by the object lock */
  EqBand bands[EQ_MAX_BANDS];
  gint n_bands;
  gboolean need_new_coefficients;

  /* streaming thread only */
  EqCascade cascade;
  gboolean cascade_ok;
  gboolean fresh;               /* no audio since reset: no ramp needed */
  gint rate;
  GstParametricEqProcessFunc process;
};

enum
{
  PROP_0,
  PROP_BANDS
};

#define ALLOWED_CAPS \
    "audio/x-raw,"                                                \
    " format=(string) {"GST_AUDIO_NE(F32)","GST_AUDIO_NE(F64)"}," \
    " rate=(int)[1,MAX],"                                         \
    " channels=(int)[1,MAX],"                                     \
    " layout=(string) interleaved"

G_DEFINE_TYPE (GstParametricEq, gst_parametric_eq, GST_TYPE_AUDIO_FILTER);
GST_ELEMENT_REGISTER_DEFINE (parametriceq, "parametriceq", GST_RANK_NONE,
    GST_TYPE_PARAMETRIC_EQ);

static void gst_parametric_eq_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec);
static void gst_parametric_eq_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec);
static void gst_parametric_eq_finalize (GObject * object);
static gboolean gst_parametric_eq_setup (GstAudioFilter * filter,
    const GstAudioInfo * info);
static gboolean gst_parametric_eq_start (GstBaseTransform * base);
static gboolean gst_parametric_eq_stop (GstBaseTransform * base);
static gboolean gst_parametric_eq_sink_event (GstBaseTransform * base,
    GstEvent * event);
static void gst_parametric_eq_before_transform (GstBaseTransform * base,
    GstBuffer * buf);
static GstFlowReturn gst_parametric_eq_transform_ip (GstBaseTransform * base,
    GstBuffer * buf);

static void
process_f32 (EqCascade * eq, gpointer data, guint frames)
{
  eq_cascade_process_f32 (eq, (gfloat *) data, frames);
}

static void
process_f64 (EqCascade * eq, gpointer data, guint frames)
{
  eq_cascade_process_f64 (eq, (gdouble *) data, frames);
}

static void
gst_parametric_eq_class_init (GstParametricEqClass * klass)
{
  GObjectClass *gobject_class = (GObjectClass *) klass;
  GstElementClass *element_class = (GstElementClass *) klass;
  GstBaseTransformClass *trans_class = (GstBaseTransformClass *) klass;
  GstAudioFilterClass *filter_class = (GstAudioFilterClass *) klass;
  GstCaps *caps;

  GST_DEBUG_CATEGORY_INIT (parametric_eq_debug, "parametriceq", 0,
      "parametric equaliser (RBJ peaking biquads)");

  gobject_class->set_property = gst_parametric_eq_set_property;
  gobject_class->get_property = gst_parametric_eq_get_property;
  gobject_class->finalize = gst_parametric_eq_finalize;

  g_object_class_install_property (gobject_class, PROP_BANDS,
      g_param_spec_string ("bands", "Bands",
          "Comma separated bands, each freq:gain[:q] (peaking): freq 20-20000 "
          "Hz, gain -24..24 dB, q 0.1-30 (default 1), 1 to 16 bands, e.g. "
          "\"100:4,1000:-3:2.5\". An invalid string is refused with a warning "
          "and the previous bands stay", DEFAULT_BANDS,
          G_PARAM_READWRITE | GST_PARAM_MUTABLE_PLAYING |
          G_PARAM_STATIC_STRINGS));

  gst_element_class_set_static_metadata (element_class,
      "Parametric equaliser", "Filter/Effect/Audio",
      "Cascade of RBJ cookbook peaking biquads, click-free updates",
      "Audio Pipeline Engine");

  caps = gst_caps_from_string (ALLOWED_CAPS);
  gst_audio_filter_class_add_pad_templates (filter_class, caps);
  gst_caps_unref (caps);

  trans_class->transform_ip =
      GST_DEBUG_FUNCPTR (gst_parametric_eq_transform_ip);
  trans_class->before_transform =
      GST_DEBUG_FUNCPTR (gst_parametric_eq_before_transform);
  trans_class->start = GST_DEBUG_FUNCPTR (gst_parametric_eq_start);
  trans_class->stop = GST_DEBUG_FUNCPTR (gst_parametric_eq_stop);
  trans_class->sink_event = GST_DEBUG_FUNCPTR (gst_parametric_eq_sink_event);
  trans_class->transform_ip_on_passthrough = FALSE;
  filter_class->setup = GST_DEBUG_FUNCPTR (gst_parametric_eq_setup);
}

static void
gst_parametric_eq_init (GstParametricEq * self)
{
  char err[128];
  int n = eq_bands_parse (DEFAULT_BANDS, self->bands, err, sizeof (err));

  g_assert (n > 0);
  self->n_bands = n;
  self->need_new_coefficients = TRUE;
  self->cascade_ok = (eq_cascade_init (&self->cascade, 1) == 0);
  self->fresh = TRUE;
  self->rate = 0;
  self->process = NULL;
  gst_base_transform_set_in_place (GST_BASE_TRANSFORM (self), TRUE);
  /* flat until told otherwise */
  gst_base_transform_set_passthrough (GST_BASE_TRANSFORM (self), TRUE);
}

static void
gst_parametric_eq_finalize (GObject * object)
{
  GstParametricEq *self = GST_PARAMETRIC_EQ (object);

  eq_cascade_clear (&self->cascade);
  G_OBJECT_CLASS (gst_parametric_eq_parent_class)->finalize (object);
}

static gchar *
bands_to_string (const EqBand * bands, gint n)
{
  GString *s = g_string_new (NULL);
  gchar buf[G_ASCII_DTOSTR_BUF_SIZE];
  gint i;

  for (i = 0; i < n; i++) {
    if (i > 0)
      g_string_append_c (s, ',');
    /* the peak type is the default and is not written */
    g_string_append (s, g_ascii_formatd (buf, sizeof (buf), "%.10g",
            bands[i].freq));
    g_string_append_c (s, ':');
    g_string_append (s, g_ascii_formatd (buf, sizeof (buf), "%.10g",
            bands[i].gain_db));
    if (bands[i].q != EQ_Q_DEFAULT) {
      g_string_append_c (s, ':');
      g_string_append (s, g_ascii_formatd (buf, sizeof (buf), "%.10g",
              bands[i].q));
    }
  }
  return g_string_free (s, FALSE);
}

static void
gst_parametric_eq_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstParametricEq *self = GST_PARAMETRIC_EQ (object);

  switch (prop_id) {
    case PROP_BANDS:{
      const gchar *str = g_value_get_string (value);
      EqBand bands[EQ_MAX_BANDS];
      char err[160];
      int n = eq_bands_parse (str, bands, err, sizeof (err));

      if (n < 0) {
        /* refused: the previous bands stay */
        GST_WARNING_OBJECT (self, "invalid bands \"%s\": %s",
            str ? str : "(null)", err);
        g_warning ("%s: invalid bands \"%s\": %s (keeping the previous bands)",
            GST_OBJECT_NAME (self), str ? str : "(null)", err);
        break;
      }
      GST_OBJECT_LOCK (self);
      memcpy (self->bands, bands, (gsize) n * sizeof (EqBand));
      self->n_bands = n;
      self->need_new_coefficients = TRUE;
      GST_OBJECT_UNLOCK (self);
      GST_DEBUG_OBJECT (self, "new bands \"%s\" (%d)", str, n);
      break;
    }
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
}

static void
gst_parametric_eq_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec)
{
  GstParametricEq *self = GST_PARAMETRIC_EQ (object);

  switch (prop_id) {
    case PROP_BANDS:{
      EqBand bands[EQ_MAX_BANDS];
      gint n;

      GST_OBJECT_LOCK (self);
      n = self->n_bands;
      memcpy (bands, self->bands, (gsize) n * sizeof (EqBand));
      GST_OBJECT_UNLOCK (self);
      g_value_take_string (value, bands_to_string (bands, n));
      break;
    }
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
}

/* Streaming thread: picks up new bands (if any) and hands the biquads to the
 * cascade. Ramps unless nothing was processed since the last reset. Then
 * decides about pass-through. */
static void
update_coefficients (GstParametricEq * self, gboolean force)
{
  GstBaseTransform *base = GST_BASE_TRANSFORM (self);
  EqBand bands[EQ_MAX_BANDS];
  gboolean changed = FALSE;
  gboolean was_passthrough, passthrough;
  gint n = 0, i;

  GST_OBJECT_LOCK (self);
  if (self->need_new_coefficients || force) {
    n = self->n_bands;
    memcpy (bands, self->bands, (gsize) n * sizeof (EqBand));
    self->need_new_coefficients = FALSE;
    changed = TRUE;
  }
  GST_OBJECT_UNLOCK (self);

  if (!self->cascade_ok || self->rate <= 0)
    return;

  was_passthrough = gst_base_transform_is_passthrough (base);

  if (changed) {
    gsize ramp;

    for (i = 0; i < n; i++) {
      EqBiquad c;

      if (bands[i].gain_db != 0.0
          && !eq_band_design (&bands[i], self->rate, &c))
        GST_INFO_OBJECT (self, "band %d (%g Hz) is above %g x rate %d: "
            "skipped", i + 1, bands[i].freq, EQ_MAX_FREQ_FRACTION, self->rate);
    }
    if (was_passthrough) {
      /* nothing went through the filter: start from zero state; the cascade
       * is flat so the ramp fades the new bands in */
      eq_cascade_reset (&self->cascade);
    }
    ramp = self->fresh ? 0 : (gsize) self->rate * RAMP_MS / 1000;
    eq_cascade_set_bands (&self->cascade, bands, (guint) n, self->rate, ramp);
    GST_DEBUG_OBJECT (self, "%d bands, ramp %" G_GSIZE_FORMAT " frames", n,
        ramp);
  }

  passthrough = eq_cascade_is_identity (&self->cascade);
  if (passthrough != was_passthrough) {
    GST_DEBUG_OBJECT (self, "pass-through %d", passthrough);
    if (passthrough)
      eq_cascade_reset (&self->cascade);
    gst_base_transform_set_passthrough (base, passthrough);
  }
}

static gboolean
gst_parametric_eq_setup (GstAudioFilter * filter, const GstAudioInfo * info)
{
  GstParametricEq *self = GST_PARAMETRIC_EQ (filter);
  gint channels = GST_AUDIO_INFO_CHANNELS (info);

  switch (GST_AUDIO_INFO_FORMAT (info)) {
    case GST_AUDIO_FORMAT_F32:
      self->process = process_f32;
      break;
    case GST_AUDIO_FORMAT_F64:
      self->process = process_f64;
      break;
    default:
      GST_ERROR_OBJECT (self, "unsupported format %s",
          gst_audio_format_to_string (GST_AUDIO_INFO_FORMAT (info)));
      self->process = NULL;
      return FALSE;
  }
  if (GST_AUDIO_INFO_RATE (info) <= 0 || channels <= 0)
    return FALSE;

  /* format change: new rate and/or channel count, state reset, the
   * coefficients are designed again for the new rate without a ramp */
  if (!self->cascade_ok || (gint) self->cascade.channels != channels) {
    if (eq_cascade_set_channels (&self->cascade, (guint) channels) != 0) {
      GST_ERROR_OBJECT (self, "cannot allocate state for %d channels",
          channels);
      self->cascade_ok = FALSE;
      return FALSE;
    }
    self->cascade_ok = TRUE;
  }
  eq_cascade_reset (&self->cascade);
  self->rate = GST_AUDIO_INFO_RATE (info);
  self->fresh = TRUE;
  update_coefficients (self, TRUE);
  GST_DEBUG_OBJECT (self, "setup: %s, %d Hz, %d channels",
      gst_audio_format_to_string (GST_AUDIO_INFO_FORMAT (info)), self->rate,
      channels);
  return TRUE;
}

static void
reset_state (GstParametricEq * self)
{
  if (self->cascade_ok)
    eq_cascade_reset (&self->cascade);
  self->fresh = TRUE;
}

static gboolean
gst_parametric_eq_start (GstBaseTransform * base)
{
  reset_state (GST_PARAMETRIC_EQ (base));
  return TRUE;
}

static gboolean
gst_parametric_eq_stop (GstBaseTransform * base)
{
  GstParametricEq *self = GST_PARAMETRIC_EQ (base);

  reset_state (self);
  self->rate = 0;
  return TRUE;
}

static gboolean
gst_parametric_eq_sink_event (GstBaseTransform * base, GstEvent * event)
{
  GstParametricEq *self = GST_PARAMETRIC_EQ (base);

  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_FLUSH_STOP:
      /* serialised with the streaming thread (stream lock held) */
      reset_state (self);
      break;
    default:
      break;
  }
  return GST_BASE_TRANSFORM_CLASS (gst_parametric_eq_parent_class)->sink_event
      (base, event);
}

static void
gst_parametric_eq_before_transform (GstBaseTransform * base, GstBuffer * buf)
{
  GstParametricEq *self = GST_PARAMETRIC_EQ (base);

  update_coefficients (self, FALSE);
  /* audio flows from now on (processed or passed through): later changes
   * ramp */
  self->fresh = FALSE;
}

static GstFlowReturn
gst_parametric_eq_transform_ip (GstBaseTransform * base, GstBuffer * buf)
{
  GstParametricEq *self = GST_PARAMETRIC_EQ (base);
  GstAudioFilter *filter = GST_AUDIO_FILTER (base);
  GstMapInfo map;
  gint bpf = GST_AUDIO_INFO_BPF (&filter->info);
  guint frames;

  if (G_UNLIKELY (self->process == NULL || !self->cascade_ok || bpf <= 0))
    return GST_FLOW_NOT_NEGOTIATED;

  if (!gst_buffer_map (buf, &map, GST_MAP_READWRITE)) {
    GST_ELEMENT_ERROR (self, STREAM, FAILED, (NULL),
        ("cannot map buffer for writing"));
    return GST_FLOW_ERROR;
  }
  frames = (guint) (map.size / (gsize) bpf);
  if (frames > 0)
    self->process (&self->cascade, map.data, frames);
  gst_buffer_unmap (buf, &map);

  return GST_FLOW_OK;
}
