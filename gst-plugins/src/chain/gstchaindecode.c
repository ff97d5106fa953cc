/* chaindecode: decodebin behind ONE always src pad that stays linked when the
 * stream it decodes starts a new chain.
 *
 * A chained Ogg stream (liquidsoap %vorbis at a title change, ezstream and
 * ices2 at a new track) ends one logical stream and begins another with new
 * codec headers. decodebin decodes the new chain on a NEW src pad and removes
 * the old one; a pipeline linked once at start-up (gst-launch-1.0) leaves the
 * new pad unlinked and the source stops with "not-linked". This bin keeps a
 * ghost src pad and points it at each new decoded audio pad as decodebin adds
 * it, so the elements after it see one stream: a new stream-start, caps and
 * segment, and the audio goes on.
 *
 *   gst-launch-1.0 fdsrc fd=0 ! chaindecode name=decode ! audioconvert ! ...
 *
 * Downstream the chains are ONE stream: a later chain's stream-start and
 * segment are dropped and its buffers are re-stamped into the first chain's
 * segment, right after the audio that left before (a new segment would meet
 * audio still held downstream, e.g. the last part of an RTP packet in the
 * payloader, and put it seconds into the future). The end of a chain is not
 * the end of the stream: decodebin (with oggdemux in push mode) may let the
 * old chain's EOS out before the new chain's pads exist; that EOS is dropped
 * unless the input itself ended.
 *
 * Messages: an element message "chaindecode" with field chain (guint, 1 for the
 * first stream) each time a decoded audio pad is taken.
 */
#include <gst/gst.h>

GST_DEBUG_CATEGORY_STATIC (chain_decode_debug);
#define GST_CAT_DEFAULT chain_decode_debug

#define GST_TYPE_CHAIN_DECODE (gst_chain_decode_get_type ())
G_DECLARE_FINAL_TYPE (GstChainDecode, gst_chain_decode, GST, CHAIN_DECODE,
    GstBin);

struct _GstChainDecode
{
  GstBin parent;

  GstElement *decodebin;
  GstPad *srcpad;

  /* under the object lock */
  guint chains;
  /* the segment downstream (the first chain's) */
  GstSegment out_segment;
  /* running time at the end of the last buffer that left, or NONE */
  GstClockTime out_end;
  /* the decodebin pad the src pad points at (a ref), and its probe (under the object lock) */
  GstPad *current;
  gulong probe_id;
  /* the stream that comes in has ended (EOS seen on the sink pad) */
  gboolean input_eos;
};

/* Overlap of a new chain with the end of the last one that is left as it is. */
#define MAX_OVERLAP (200 * GST_MSECOND)

G_DEFINE_TYPE (GstChainDecode, gst_chain_decode, GST_TYPE_BIN);
GST_ELEMENT_REGISTER_DEFINE (chaindecode, "chaindecode", GST_RANK_NONE,
    GST_TYPE_CHAIN_DECODE);

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS ("audio/x-raw"));

typedef struct
{
  GstChainDecode *self;
  guint chain;
  /* the segment this pad's data is in */
  GstSegment segment;
  gboolean has_segment;
  /* chain > 1: running time added to this chain's own, set at its first buffer */
  GstClockTimeDiff shift;
  gboolean shift_set;
} PadState;

static void
pad_state_free (gpointer data)
{
  g_free (data);
}

/* Chain > 1: the buffer moved into the first chain's segment, right after the
 * audio that left before it. */
static GstBuffer *
follow_on (PadState * st, GstBuffer * buf)
{
  GstChainDecode *self = st->self;
  GstClockTime pts = GST_BUFFER_PTS (buf);
  GstClockTime rt, out_pts;

  if (!st->has_segment || !GST_CLOCK_TIME_IS_VALID (pts))
    return buf;
  rt = gst_segment_to_running_time (&st->segment, GST_FORMAT_TIME, pts);
  if (!GST_CLOCK_TIME_IS_VALID (rt))
    return buf;

  GST_OBJECT_LOCK (self);
  if (!st->shift_set) {
    st->shift_set = TRUE;
    st->shift = GST_CLOCK_TIME_IS_VALID (self->out_end) ?
        GST_CLOCK_DIFF (rt, self->out_end) : 0;
    /* A small overlap (the last chain's padding, tens of ms) is not shifted:
     * those buffers leave a little early and the latency does not grow with
     * every chain. A gap is closed; a restart of the time is followed. */
    if (st->shift > 0 && st->shift <= MAX_OVERLAP)
      st->shift = 0;
    GST_INFO_OBJECT (self, "chain %u follows on, shift %" GST_STIME_FORMAT,
        st->chain, GST_STIME_ARGS (st->shift));
  }
  if (st->shift < 0 && (GstClockTime) (-st->shift) > rt)
    rt = 0;
  else
    rt = (GstClockTime) ((GstClockTimeDiff) rt + st->shift);
  out_pts = gst_segment_position_from_running_time (&self->out_segment,
      GST_FORMAT_TIME, rt);
  GST_OBJECT_UNLOCK (self);

  if (!GST_CLOCK_TIME_IS_VALID (out_pts))
    return buf;
  buf = gst_buffer_make_writable (buf);
  GST_BUFFER_PTS (buf) = out_pts;
  GST_BUFFER_DTS (buf) = GST_CLOCK_TIME_NONE;
  return buf;
}

static GstPadProbeReturn
on_data (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  PadState *st = user_data;
  GstChainDecode *self = st->self;

  if (info->type & GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM) {
    GstEvent *event = GST_PAD_PROBE_INFO_EVENT (info);

    switch (GST_EVENT_TYPE (event)) {
      case GST_EVENT_SEGMENT:
        gst_event_copy_segment (event, &st->segment);
        st->has_segment = st->segment.format == GST_FORMAT_TIME;
        if (st->chain == 1) {
          GST_OBJECT_LOCK (self);
          gst_event_copy_segment (event, &self->out_segment);
          GST_OBJECT_UNLOCK (self);
          return GST_PAD_PROBE_OK;
        }
        /* later chains stay in the first chain's segment downstream */
        return st->has_segment ? GST_PAD_PROBE_DROP : GST_PAD_PROBE_OK;
      case GST_EVENT_STREAM_START:
        /* downstream, the chains are one stream */
        return st->chain == 1 ? GST_PAD_PROBE_OK : GST_PAD_PROBE_DROP;
      case GST_EVENT_EOS:{
        gboolean input_eos;

        GST_OBJECT_LOCK (self);
        input_eos = self->input_eos;
        GST_OBJECT_UNLOCK (self);
        /* A chain ended while the input goes on: oggdemux (push mode) ends
         * the old chain's pads before it adds the new chain's, and decodebin
         * may then let that EOS out. Only the input's own end ends the
         * stream downstream. */
        if (!input_eos) {
          GST_INFO_OBJECT (self, "dropping the EOS of chain %u", st->chain);
          return GST_PAD_PROBE_DROP;
        }
        return GST_PAD_PROBE_OK;
      }
      default:
        return GST_PAD_PROBE_OK;
    }
  }

  if (info->type & GST_PAD_PROBE_TYPE_BUFFER) {
    GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
    GstClockTime end;

    if (st->chain > 1) {
      buf = follow_on (st, buf);
      GST_PAD_PROBE_INFO_DATA (info) = buf;
    }
    GST_OBJECT_LOCK (self);
    end = GST_BUFFER_PTS (buf);
    if (GST_CLOCK_TIME_IS_VALID (end)) {
      if (GST_BUFFER_DURATION_IS_VALID (buf))
        end += GST_BUFFER_DURATION (buf);
      end = gst_segment_to_running_time (&self->out_segment, GST_FORMAT_TIME,
          end);
      if (GST_CLOCK_TIME_IS_VALID (end))
        self->out_end = end;
    }
    GST_OBJECT_UNLOCK (self);
  }
  return GST_PAD_PROBE_OK;
}

static GstPadProbeReturn
on_input_event (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  GstChainDecode *self = GST_CHAIN_DECODE (user_data);
  GstEvent *event = GST_PAD_PROBE_INFO_EVENT (info);

  if (GST_EVENT_TYPE (event) == GST_EVENT_EOS
      || GST_EVENT_TYPE (event) == GST_EVENT_FLUSH_STOP) {
    GST_OBJECT_LOCK (self);
    self->input_eos = GST_EVENT_TYPE (event) == GST_EVENT_EOS;
    GST_OBJECT_UNLOCK (self);
  }
  return GST_PAD_PROBE_OK;
}

static gboolean
is_audio (GstPad * pad)
{
  GstCaps *caps = gst_pad_get_current_caps (pad);
  gboolean audio = FALSE;

  if (caps == NULL)
    caps = gst_pad_query_caps (pad, NULL);
  if (caps != NULL && gst_caps_get_size (caps) > 0) {
    const gchar *name = gst_structure_get_name (gst_caps_get_structure (caps,
            0));
    audio = g_str_has_prefix (name, "audio/");
  }
  if (caps != NULL)
    gst_caps_unref (caps);
  return audio;
}

static void
on_pad_added (GstElement * decodebin, GstPad * pad, gpointer user_data)
{
  GstChainDecode *self = GST_CHAIN_DECODE (user_data);
  PadState *st;
  guint chain;
  GstPad *old;
  gulong old_probe, probe;

  if (GST_PAD_DIRECTION (pad) != GST_PAD_SRC || !is_audio (pad)) {
    GST_DEBUG_OBJECT (self, "ignoring pad %" GST_PTR_FORMAT, pad);
    return;
  }

  st = g_new0 (PadState, 1);
  st->self = self;
  gst_segment_init (&st->segment, GST_FORMAT_UNDEFINED);

  GST_OBJECT_LOCK (self);
  chain = ++self->chains;
  GST_OBJECT_UNLOCK (self);
  st->chain = chain;
  /* before the pad is the target: its first events and buffers pass the probe */
  probe = gst_pad_add_probe (pad,
      GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM, on_data,
      st, pad_state_free);

  GST_OBJECT_LOCK (self);
  old = self->current;
  old_probe = self->probe_id;
  self->current = gst_object_ref (pad);
  self->probe_id = probe;
  GST_OBJECT_UNLOCK (self);

  if (old != NULL) {
    gst_pad_remove_probe (old, old_probe);
    gst_object_unref (old);
  }

  if (!gst_ghost_pad_set_target (GST_GHOST_PAD (self->srcpad), pad))
    GST_ELEMENT_WARNING (self, CORE, PAD, (NULL),
        ("could not take decoded pad %s:%s", GST_DEBUG_PAD_NAME (pad)));

  GST_INFO_OBJECT (self, "chain %u on pad %s:%s", chain,
      GST_DEBUG_PAD_NAME (pad));
  gst_element_post_message (GST_ELEMENT (self),
      gst_message_new_element (GST_OBJECT (self),
          gst_structure_new ("chaindecode", "chain", G_TYPE_UINT, chain,
              NULL)));
}

static GstStateChangeReturn
gst_chain_decode_change_state (GstElement * element, GstStateChange transition)
{
  GstChainDecode *self = GST_CHAIN_DECODE (element);
  GstStateChangeReturn ret;

  if (transition == GST_STATE_CHANGE_READY_TO_PAUSED) {
    GST_OBJECT_LOCK (self);
    self->chains = 0;
    self->out_end = GST_CLOCK_TIME_NONE;
    self->input_eos = FALSE;
    gst_segment_init (&self->out_segment, GST_FORMAT_TIME);
    GST_OBJECT_UNLOCK (self);
  }
  ret = GST_ELEMENT_CLASS (gst_chain_decode_parent_class)->change_state
      (element, transition);
  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY) {
    GstPad *old;
    gulong old_probe;

    GST_OBJECT_LOCK (self);
    old = self->current;
    old_probe = self->probe_id;
    self->current = NULL;
    self->probe_id = 0;
    GST_OBJECT_UNLOCK (self);
    if (old != NULL) {
      gst_pad_remove_probe (old, old_probe);
      gst_object_unref (old);
    }
  }
  return ret;
}

static void
gst_chain_decode_init (GstChainDecode * self)
{
  GstPad *target;
  GstPad *sinkpad;
  GstPadTemplate *sink_templ, *src_templ;

  self->out_end = GST_CLOCK_TIME_NONE;
  gst_segment_init (&self->out_segment, GST_FORMAT_TIME);
  self->decodebin = gst_element_factory_make ("decodebin", "decodebin");
  if (self->decodebin == NULL) {
    GST_ERROR_OBJECT (self, "decodebin is missing");
  } else {
    gst_bin_add (GST_BIN (self), self->decodebin);
    g_signal_connect (self->decodebin, "pad-added", G_CALLBACK (on_pad_added),
        self);
  }

  /* the class's own templates: borrowed, nothing to release */
  sink_templ = gst_element_class_get_pad_template (GST_ELEMENT_GET_CLASS (self),
      "sink");
  src_templ = gst_element_class_get_pad_template (GST_ELEMENT_GET_CLASS (self),
      "src");
  target = self->decodebin ? gst_element_get_static_pad (self->decodebin,
      "sink") : NULL;
  sinkpad = target ? gst_ghost_pad_new_from_template ("sink", target,
      sink_templ) : gst_ghost_pad_new_no_target_from_template ("sink",
      sink_templ);
  if (target) {
    gst_pad_add_probe (target, GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM,
        on_input_event, self, NULL);
    gst_object_unref (target);
  }
  gst_element_add_pad (GST_ELEMENT (self), sinkpad);

  self->srcpad = gst_ghost_pad_new_no_target_from_template ("src", src_templ);
  gst_element_add_pad (GST_ELEMENT (self), self->srcpad);
}

static void
gst_chain_decode_class_init (GstChainDecodeClass * klass)
{
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);

  element_class->change_state = gst_chain_decode_change_state;
  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class,
      "Chain-following decoder", "Codec/Decoder/Audio/Bin",
      "decodebin behind one src pad that follows new chains of the stream",
      "audio-engine");
  GST_DEBUG_CATEGORY_INIT (chain_decode_debug, "chaindecode", 0,
      "decodebin that follows chained streams");
}
