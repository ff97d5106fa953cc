/* aacframer: ADTS AAC from a demuxer, one raw AAC frame per buffer as soon
 * as the frame is complete.
 *
 * Why: in GStreamer 1.22 aacparse (which decodebin plugs before an AAC
 * decoder) keeps as its minimum frame size the length of a frame it saw
 * while finding sync, plus the 9 bytes of the next header, and holds any
 * smaller frame until the next one arrives.  AAC frames vary in size, so
 * an SRT sender that sends one AAC frame per PES (low latency) had each
 * frame held for the next: 21.3 ms more delay at 48 kHz, for some frames
 * and not others (measured: bridge input timestamps one frame behind
 * tsdemux's output, GST_DEBUG=baseparse:6 "not enough data available").
 * Raw AAC with codec_data is framed by definition: aacparse passes it
 * through, and the decoder decodes each frame as it comes.
 *
 * In: whatever the demuxer gives.  ADTS AAC (audio/mpeg, mpegversion 2 or 4,
 * stream-format adts) is split at its frame headers (a frame may span input
 * buffers; an input buffer may hold several frames) and each complete frame
 * leaves at once without its header, as audio/mpeg, mpegversion 4,
 * stream-format raw, framed, with the AudioSpecificConfig built from the
 * header as codec_data (new caps when the header's profile, rate or
 * channels change).  Timestamps: an input buffer's PTS belongs to the
 * first frame that starts in it; the frames after it follow at 1024
 * samples each.  Frames with more than one raw data block, or data that
 * is not ADTS, end the splitting: from then on the element passes its
 * input through unchanged with the input's caps (decodebin then plugs
 * aacparse as before).  Everything else (MPEG-1 audio, AC-3, SMPTE 302M)
 * passes through untouched.
 *
 * At NULL->READY it loads the decoders decodebin will plug behind it
 * (load_decoders), so that a stream's first audio does not pay for them.
 *
 * Events: CAPS chooses the mode; while splitting, the caps go out with the
 * first frame's header and the sticky events after caps (segment, tags)
 * wait for them, so downstream sees them in order.  FLUSH_STOP, a new
 * STREAM_START and EOS drop a partial frame (nothing is held); the rest is
 * forwarded. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/gst.h>
#include <gst/base/gstadapter.h>
#include <string.h>

GST_DEBUG_CATEGORY_STATIC (aac_framer_debug);
#define GST_CAT_DEFAULT aac_framer_debug

#define ADTS_HEADER 7
#define ADTS_HEADER_CRC 9
#define SAMPLES_PER_FRAME 1024

#define GST_TYPE_AAC_FRAMER (gst_aac_framer_get_type ())
G_DECLARE_FINAL_TYPE (GstAacFramer, gst_aac_framer, GST, AAC_FRAMER,
    GstElement);

typedef enum
{
  MODE_PASS,                    /* not ADTS, or given up: buffers as they are */
  MODE_SPLIT                    /* ADTS: one raw frame per buffer */
} Mode;

struct _GstAacFramer
{
  GstElement parent;
  GstPad *sinkpad, *srcpad;
  /* streaming thread only */
  Mode mode;
  GstCaps *in_caps;             /* for falling back to pass-through */
  GstAdapter *adapter;
  GstClockTime next_pts;
  guint rate, channels, object_type;    /* of the caps sent; 0 = none */
  guint8 config[3];             /* profile, frequency index, channels */
  GList *waiting;               /* sticky events held until the caps go out */
  gboolean discont;             /* the next frame out starts after a gap */
};

G_DEFINE_TYPE (GstAacFramer, gst_aac_framer, GST_TYPE_ELEMENT);
GST_ELEMENT_REGISTER_DEFINE (aacframer, "aacframer", GST_RANK_NONE,
    GST_TYPE_AAC_FRAMER);

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);

static const guint adts_rates[] = { 96000, 88200, 64000, 48000, 44100, 32000,
  24000, 22050, 16000, 12000, 11025, 8000, 7350
};

static gboolean
is_adts (const GstCaps * caps)
{
  const GstStructure *s;
  const gchar *format;
  gint version;

  if (caps == NULL || gst_caps_get_size (caps) != 1)
    return FALSE;
  s = gst_caps_get_structure (caps, 0);
  format = gst_structure_get_string (s, "stream-format");
  return gst_structure_has_name (s, "audio/mpeg")
      && gst_structure_get_int (s, "mpegversion", &version)
      && (version == 2 || version == 4) && format != NULL
      && strcmp (format, "adts") == 0;
}

/* pushes the events held for the caps, in order */
static void
release_waiting (GstAacFramer * self)
{
  GList *events = g_list_reverse (self->waiting);

  self->waiting = NULL;
  for (GList * l = events; l != NULL; l = l->next)
    gst_pad_push_event (self->srcpad, GST_EVENT (l->data));
  g_list_free (events);
}

static void
drop_waiting (GstAacFramer * self)
{
  g_list_free_full (self->waiting, (GDestroyNotify) gst_event_unref);
  self->waiting = NULL;
}

static void
drop_partial (GstAacFramer * self)
{
  if (gst_adapter_available (self->adapter) > 0)
    self->discont = TRUE;       /* the partial frame is lost */
  gst_adapter_clear (self->adapter);
  self->next_pts = GST_CLOCK_TIME_NONE;
}

/* from now on the input goes out as it is */
static GstFlowReturn
give_up (GstAacFramer * self, const gchar * why)
{
  GstBuffer *rest = NULL;
  gsize left = gst_adapter_available (self->adapter);

  GST_WARNING_OBJECT (self, "%s: passing ADTS through unchanged", why);
  self->mode = MODE_PASS;
  if (left > 0)
    rest = gst_adapter_take_buffer (self->adapter, left);
  drop_partial (self);
  if (self->in_caps)
    gst_pad_push_event (self->srcpad, gst_event_new_caps (self->in_caps));
  release_waiting (self);
  self->rate = 0;
  return rest ? gst_pad_push (self->srcpad, rest) : GST_FLOW_OK;
}

/* caps for a header's configuration, sent when it changed */
static void
send_config (GstAacFramer * self, const guint8 * h)
{
  guint profile = (h[2] >> 6) & 3;
  guint freq = (h[2] >> 2) & 15;
  guint channels = ((h[2] & 1) << 2) | (h[3] >> 6);
  GstBuffer *asc;
  GstCaps *caps;
  guint8 cfg[2];

  if (self->rate != 0 && self->config[0] == profile
      && self->config[1] == freq && self->config[2] == channels)
    return;
  self->config[0] = profile;
  self->config[1] = freq;
  self->config[2] = channels;
  self->object_type = profile + 1;
  self->rate = adts_rates[freq];
  self->channels = channels;
  /* AudioSpecificConfig: object type (5 bits), frequency index (4),
   * channel configuration (4), GASpecificConfig zeros (3) */
  cfg[0] = (guint8) ((self->object_type << 3) | (freq >> 1));
  cfg[1] = (guint8) (((freq & 1) << 7) | (channels << 3));
  asc = gst_buffer_new_memdup (cfg, sizeof (cfg));
  caps = gst_caps_new_simple ("audio/mpeg",
      "mpegversion", G_TYPE_INT, 4,
      "stream-format", G_TYPE_STRING, "raw",
      "framed", G_TYPE_BOOLEAN, TRUE,
      "rate", G_TYPE_INT, (gint) self->rate,
      "channels", G_TYPE_INT, (gint) channels,
      "codec_data", GST_TYPE_BUFFER, asc, NULL);
  gst_buffer_unref (asc);
  GST_INFO_OBJECT (self, "caps %" GST_PTR_FORMAT, caps);
  gst_pad_push_event (self->srcpad, gst_event_new_caps (caps));
  gst_caps_unref (caps);
  release_waiting (self);
}

/* pushes every complete frame in the adapter */
static GstFlowReturn
split (GstAacFramer * self)
{
  GstFlowReturn ret = GST_FLOW_OK;

  while (ret == GST_FLOW_OK) {
    gsize avail = gst_adapter_available (self->adapter);
    guint8 h[ADTS_HEADER];
    guint length, header, freq;
    GstBuffer *frame;

    if (avail < ADTS_HEADER)
      break;
    gst_adapter_copy (self->adapter, h, 0, ADTS_HEADER);
    if (h[0] != 0xff || (h[1] & 0xf6) != 0xf0)
      return give_up (self, "no ADTS sync word where a frame should begin");
    freq = (h[2] >> 2) & 15;
    header = (h[1] & 1) ? ADTS_HEADER : ADTS_HEADER_CRC;
    length = ((guint) (h[3] & 3) << 11) | ((guint) h[4] << 3) | (h[5] >> 5);
    if (freq >= G_N_ELEMENTS (adts_rates) || length <= header)
      return give_up (self, "an ADTS header out of range");
    if ((h[6] & 3) != 0)
      return give_up (self, "ADTS frames of several raw data blocks");
    if (avail < length)
      break;                    /* the rest of the frame is still coming */
    send_config (self, h);
    gst_adapter_flush (self->adapter, header);
    frame = gst_adapter_take_buffer (self->adapter, length - header);
    /* the input's flags came along: a decoder resets at each DISCONT */
    frame = gst_buffer_make_writable (frame);
    if (self->discont)
      GST_BUFFER_FLAG_SET (frame, GST_BUFFER_FLAG_DISCONT);
    else
      GST_BUFFER_FLAG_UNSET (frame, GST_BUFFER_FLAG_DISCONT);
    self->discont = FALSE;
    GST_BUFFER_PTS (frame) = self->next_pts;
    GST_BUFFER_DTS (frame) = GST_CLOCK_TIME_NONE;
    GST_BUFFER_DURATION (frame) =
        gst_util_uint64_scale_int (SAMPLES_PER_FRAME, GST_SECOND, self->rate);
    if (GST_CLOCK_TIME_IS_VALID (self->next_pts))
      self->next_pts += GST_BUFFER_DURATION (frame);
    ret = gst_pad_push (self->srcpad, frame);
  }
  return ret;
}

static GstFlowReturn
gst_aac_framer_chain (GstPad * pad, GstObject * parent, GstBuffer * buffer)
{
  GstAacFramer *self = GST_AAC_FRAMER (parent);

  if (self->mode == MODE_PASS)
    return gst_pad_push (self->srcpad, buffer);
  if (GST_BUFFER_IS_DISCONT (buffer)) {
    drop_partial (self);
    self->discont = TRUE;
  }
  /* the PTS of an input buffer is its first frame's: frames end at buffer
   * ends in a demuxer's output, so it applies when nothing is pending */
  if (gst_adapter_available (self->adapter) == 0
      && GST_BUFFER_PTS_IS_VALID (buffer))
    self->next_pts = GST_BUFFER_PTS (buffer);
  gst_adapter_push (self->adapter, buffer);
  return split (self);
}

static gboolean
gst_aac_framer_sink_event (GstPad * pad, GstObject * parent, GstEvent * event)
{
  GstAacFramer *self = GST_AAC_FRAMER (parent);

  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_CAPS:{
      GstCaps *caps;

      gst_event_parse_caps (event, &caps);
      gst_caps_replace (&self->in_caps, caps);
      drop_partial (self);
      self->rate = 0;
      self->mode = is_adts (caps) ? MODE_SPLIT : MODE_PASS;
      GST_INFO_OBJECT (self, "%s %" GST_PTR_FORMAT,
          self->mode == MODE_SPLIT ? "splitting" : "passing", caps);
      if (self->mode == MODE_SPLIT) {
        /* the caps go out with the first frame's header */
        gst_event_unref (event);
        return TRUE;
      }
      /* the default handler forwards caps only on proxy-caps pads */
      return gst_pad_push_event (self->srcpad, event);
    }
    case GST_EVENT_FLUSH_STOP:
      drop_partial (self);
      break;
    case GST_EVENT_STREAM_START:
      drop_partial (self);
      drop_waiting (self);      /* the old stream's */
      break;
    case GST_EVENT_EOS:
      drop_partial (self);
      release_waiting (self);   /* a stream without a frame: as they came */
      break;
    default:
      if (self->mode == MODE_SPLIT && self->rate == 0
          && GST_EVENT_IS_STICKY (event)
          && GST_EVENT_TYPE (event) > GST_EVENT_CAPS) {
        self->waiting = g_list_prepend (self->waiting, event);
        return TRUE;
      }
      break;
  }
  return gst_pad_event_default (pad, parent, event);
}

/* The decoders decodebin will plug behind this element, loaded at
 * NULL->READY: the child's start, before any input.  Loading a decoder's
 * plugin is most of a stream's start-up work (gst-libav's plugin_init
 * registers every codec: 0.13-0.2 s of CPU on an idle host, by
 * `gst-inspect-1.0 avdec_aac` against `gst-inspect-1.0 identity`); done at
 * the first audio, in the streaming thread, it met a backlog of queued
 * input, and with 24 children starting together on 2 cores it ran past the
 * real-time budget (the clock bridge's guard moved 19 of 24 such threads
 * to SCHED_OTHER) and the first audio came 15-55 s after the callers did.
 * Per kind of audio/mpeg the demuxer gives (AAC as this element sends it,
 * MPEG-1/2 audio), the audio decoder of highest rank that takes it, as
 * decodebin chooses; a decoder not found is left to decodebin. */
static void
load_decoders (void)
{
  static const gchar *const kinds[] = {
    "audio/mpeg, mpegversion=(int)4, stream-format=(string)raw, framed=(boolean)true",
    "audio/mpeg, mpegversion=(int)1",
  };
  GList *decoders = gst_element_factory_list_get_elements
      (GST_ELEMENT_FACTORY_TYPE_DECODER | GST_ELEMENT_FACTORY_TYPE_MEDIA_AUDIO,
      GST_RANK_MARGINAL);
  guint i;

  for (i = 0; i < G_N_ELEMENTS (kinds); i++) {
    GstCaps *caps = gst_caps_from_string (kinds[i]);
    GList *fit = gst_element_factory_list_filter (decoders, caps,
        GST_PAD_SINK, FALSE);

    fit = g_list_sort (fit, gst_plugin_feature_rank_compare_func);
    if (fit != NULL) {
      GstPluginFeature *loaded =
          gst_plugin_feature_load (GST_PLUGIN_FEATURE (fit->data));
      GST_DEBUG ("%s: %s loaded", kinds[i],
          GST_OBJECT_NAME (GST_OBJECT (fit->data)));
      if (loaded != NULL)
        gst_object_unref (loaded);
    }
    gst_plugin_feature_list_free (fit);
    gst_caps_unref (caps);
  }
  gst_plugin_feature_list_free (decoders);
}

static GstStateChangeReturn
gst_aac_framer_change_state (GstElement * element, GstStateChange transition)
{
  GstAacFramer *self = GST_AAC_FRAMER (element);
  GstStateChangeReturn ret;

  if (transition == GST_STATE_CHANGE_NULL_TO_READY)
    load_decoders ();
  ret = GST_ELEMENT_CLASS (gst_aac_framer_parent_class)->change_state (element,
      transition);

  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY) {
    drop_partial (self);
    drop_waiting (self);
    gst_caps_replace (&self->in_caps, NULL);
    self->mode = MODE_PASS;
    self->rate = 0;
  }
  return ret;
}

static void
gst_aac_framer_finalize (GObject * object)
{
  GstAacFramer *self = GST_AAC_FRAMER (object);

  g_object_unref (self->adapter);
  drop_waiting (self);
  gst_caps_replace (&self->in_caps, NULL);
  G_OBJECT_CLASS (gst_aac_framer_parent_class)->finalize (object);
}

static void
gst_aac_framer_class_init (GstAacFramerClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);

  gobject_class->finalize = gst_aac_framer_finalize;
  element_class->change_state = gst_aac_framer_change_state;
  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class, "AAC framer",
      "Codec/Parser/Audio",
      "Splits ADTS AAC into raw frames, each leaving as soon as it is complete",
      "Audio Pipeline Engine");
  GST_DEBUG_CATEGORY_INIT (aac_framer_debug, "aacframer", 0, "AAC framer");
}

static void
gst_aac_framer_init (GstAacFramer * self)
{
  self->sinkpad = gst_pad_new_from_static_template (&sink_template, "sink");
  gst_pad_set_chain_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_aac_framer_chain));
  gst_pad_set_event_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_aac_framer_sink_event));
  gst_element_add_pad (GST_ELEMENT (self), self->sinkpad);
  self->srcpad = gst_pad_new_from_static_template (&src_template, "src");
  gst_element_add_pad (GST_ELEMENT (self), self->srcpad);
  self->adapter = gst_adapter_new ();
  self->mode = MODE_PASS;
  self->next_pts = GST_CLOCK_TIME_NONE;
  self->discont = TRUE;
}
