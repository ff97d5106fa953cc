/* rtpbatch: groups consecutive RTP packets into buffer lists, so that the sink
 * after it wakes once per list instead of once per packet.
 *
 *   ... ! rtpL24pay min-ptime=1000000 max-ptime=1000000 ! rtpbatch packets=4 \
 *       ! udpsink sync=true
 *
 * Why: a synchronised sink (udpsink sync=true) waits on the clock before every
 * buffer it renders. With 1 ms packets that is 1000 clock waits (a sleep, a
 * timer interrupt and a context switch each) per second and pipeline, which
 * cost more CPU than the audio processing itself. GstBaseSink syncs a buffer
 * list once, on the running time of its first buffer, and udpsink sends a
 * list with one sendmmsg() call. With packets=N the sink wakes every N packet
 * times and sends N packets back to back: the first on time, the last
 * (N - 1) packet times early. Receivers buffer early packets (AES67 asks for
 * at least 3 packet times of receive buffer, 20 recommended); none arrives
 * late. packets=1 passes every buffer through untouched (strict pacing).
 *
 * The element holds at most N - 1 packets. It adds no latency in a live graph:
 * upstream runs ahead of the sink by the graph's latency (hundreds of ms for
 * SRT input), so the N-th packet is there long before the first is due.
 *
 * A list is pushed early (shorter than N) when:
 *   - the next packet is not contiguous in time with the held ones (its PTS
 *     is more than half a packet duration away from the end of the last
 *     held packet, or either timestamp is unknown) or carries DISCONT /
 *     RESYNC: a list is synchronised on its first packet, so a gap inside
 *     it would send the packets after the gap too early;
 *   - a serialized event arrives (EOS, SEGMENT, CAPS, ...): held packets go
 *     out before it, in order.
 * FLUSH_STOP and PAUSED->READY drop held packets.
 *
 * media-clock=true rewrites every packet's RTP timestamp to the media clock
 * (AES67-2018, RFC 7273 `mediaclk:direct=0`, ST 2110-30):
 *
 *   rtp_ts = floor (t x clock_rate / 1e9) mod 2^32
 *   t      = base_time + running time of the packet's PTS + latency
 *
 * t is the pipeline clock time at which the sink sends the packet's first
 * sample (a synchronised sink renders at base_time + running time +
 * latency).  With the pipeline clock on TAI (clockbridge), t is TAI ns
 * since the PTP epoch.  clock_rate comes from the caps.  The latency is
 * the one the sinks wait, learnt from the LATENCY event the bin sends
 * upstream from the sinks when it (re)distributes latency; until that
 * event has passed, the minimum latency of an upstream LATENCY query.
 * While packets are contiguous (PTS within half a packet of the end of the
 * previous packet) and the computed stamp is within one sample of the
 * previous stamp plus the previous packet's samples, that sum is used, so
 * consecutive stamps differ by exactly samples-per-packet whatever the
 * rounding of the PTS.  The rewrite happens before batching, so it works
 * the same with packets=1 (otherwise a pass-through).
 *
 * Threading: `packets` and `media-clock` are read under the object lock; the held list is only
 * touched by the streaming thread (chain and serialized events, both under
 * the pad's stream lock) and by PAUSED->READY after the streaming thread has
 * stopped.
 */
#include <gst/gst.h>

GST_DEBUG_CATEGORY_STATIC (rtp_batch_debug);
#define GST_CAT_DEFAULT rtp_batch_debug

#define DEFAULT_PACKETS 1
#define MAX_PACKETS     64

#define GST_TYPE_RTP_BATCH (gst_rtp_batch_get_type ())
G_DECLARE_FINAL_TYPE (GstRtpBatch, gst_rtp_batch, GST, RTP_BATCH, GstElement);

struct _GstRtpBatch
{
  GstElement parent;

  GstPad *sinkpad;
  GstPad *srcpad;

  /* properties, under the object lock */
  guint packets;
  gboolean media_clock;

  /* the latency the sinks wait (LATENCY event), under the object lock */
  GstClockTime latency;

  /* streaming thread only: the media clock's inputs and last stamp;
   * upstream's minimum latency, queried once while no LATENCY event came */
  GstClockTime queried_latency;
  GstSegment segment;
  gint clock_rate;
  gboolean have_stamp;
  guint32 last_stamp;
  guint32 last_samples;
  GstClockTime last_end;        /* PTS + duration of the last stamped packet */

  /* streaming thread only (see the threading note above) */
  GstBufferList *held;
  GstClockTime held_end;        /* PTS + duration of the last held packet */
};

enum
{
  PROP_0,
  PROP_PACKETS,
  PROP_MEDIA_CLOCK
};

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS ("application/x-rtp"));
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS ("application/x-rtp"));

G_DEFINE_TYPE (GstRtpBatch, gst_rtp_batch, GST_TYPE_ELEMENT);
GST_ELEMENT_REGISTER_DEFINE (rtpbatch, "rtpbatch", GST_RANK_NONE,
    GST_TYPE_RTP_BATCH);

static void gst_rtp_batch_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec);
static void gst_rtp_batch_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec);
static void gst_rtp_batch_finalize (GObject * object);
static GstStateChangeReturn gst_rtp_batch_change_state (GstElement * element,
    GstStateChange transition);
static GstFlowReturn gst_rtp_batch_chain (GstPad * pad, GstObject * parent,
    GstBuffer * buffer);
static gboolean gst_rtp_batch_sink_event (GstPad * pad, GstObject * parent,
    GstEvent * event);
static gboolean gst_rtp_batch_src_event (GstPad * pad, GstObject * parent,
    GstEvent * event);

static void
gst_rtp_batch_class_init (GstRtpBatchClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);

  gobject_class->set_property = gst_rtp_batch_set_property;
  gobject_class->get_property = gst_rtp_batch_get_property;
  gobject_class->finalize = gst_rtp_batch_finalize;

  g_object_class_install_property (gobject_class, PROP_PACKETS,
      g_param_spec_uint ("packets", "Packets",
          "Packets per buffer list: the sink wakes once per list and sends "
          "them back to back (1 = pass every packet through on its own)",
          1, MAX_PACKETS, DEFAULT_PACKETS,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));

  g_object_class_install_property (gobject_class, PROP_MEDIA_CLOCK,
      g_param_spec_boolean ("media-clock", "Media clock",
          "Rewrite RTP timestamps to floor(t x clock-rate / 1e9) mod 2^32, t = "
          "the pipeline clock time the packet's first sample is sent "
          "(AES67 / RFC 7273 mediaclk:direct=0)", FALSE,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  element_class->change_state = GST_DEBUG_FUNCPTR (gst_rtp_batch_change_state);

  gst_element_class_set_static_metadata (element_class,
      "RTP packet batcher", "Filter/Network/RTP",
      "Groups consecutive RTP packets into buffer lists so a synchronised "
      "sink wakes once per list", "audio-engine");

  GST_DEBUG_CATEGORY_INIT (rtp_batch_debug, "rtpbatch", 0, "rtpbatch");
}

static void
gst_rtp_batch_init (GstRtpBatch * self)
{
  self->packets = DEFAULT_PACKETS;
  self->held = NULL;
  self->held_end = GST_CLOCK_TIME_NONE;
  self->latency = GST_CLOCK_TIME_NONE;
  self->queried_latency = GST_CLOCK_TIME_NONE;
  gst_segment_init (&self->segment, GST_FORMAT_UNDEFINED);

  self->sinkpad = gst_pad_new_from_static_template (&sink_template, "sink");
  gst_pad_set_chain_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_rtp_batch_chain));
  gst_pad_set_event_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_rtp_batch_sink_event));
  GST_PAD_SET_PROXY_CAPS (self->sinkpad);
  GST_PAD_SET_PROXY_ALLOCATION (self->sinkpad);
  GST_PAD_SET_PROXY_SCHEDULING (self->sinkpad);
  gst_element_add_pad (GST_ELEMENT (self), self->sinkpad);

  self->srcpad = gst_pad_new_from_static_template (&src_template, "src");
  gst_pad_set_event_function (self->srcpad,
      GST_DEBUG_FUNCPTR (gst_rtp_batch_src_event));
  GST_PAD_SET_PROXY_CAPS (self->srcpad);
  GST_PAD_SET_PROXY_ALLOCATION (self->srcpad);
  GST_PAD_SET_PROXY_SCHEDULING (self->srcpad);
  gst_element_add_pad (GST_ELEMENT (self), self->srcpad);
}

static void
gst_rtp_batch_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstRtpBatch *self = GST_RTP_BATCH (object);

  switch (prop_id) {
    case PROP_PACKETS:
      GST_OBJECT_LOCK (self);
      self->packets = g_value_get_uint (value);
      GST_OBJECT_UNLOCK (self);
      break;
    case PROP_MEDIA_CLOCK:
      GST_OBJECT_LOCK (self);
      self->media_clock = g_value_get_boolean (value);
      GST_OBJECT_UNLOCK (self);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
}

static void
gst_rtp_batch_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec)
{
  GstRtpBatch *self = GST_RTP_BATCH (object);

  switch (prop_id) {
    case PROP_PACKETS:
      GST_OBJECT_LOCK (self);
      g_value_set_uint (value, self->packets);
      GST_OBJECT_UNLOCK (self);
      break;
    case PROP_MEDIA_CLOCK:
      GST_OBJECT_LOCK (self);
      g_value_set_boolean (value, self->media_clock);
      GST_OBJECT_UNLOCK (self);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
}

static void
gst_rtp_batch_drop_held (GstRtpBatch * self)
{
  if (self->held)
    gst_buffer_list_unref (self->held);
  self->held = NULL;
  self->held_end = GST_CLOCK_TIME_NONE;
}

static void
gst_rtp_batch_finalize (GObject * object)
{
  gst_rtp_batch_drop_held (GST_RTP_BATCH (object));
  G_OBJECT_CLASS (gst_rtp_batch_parent_class)->finalize (object);
}

/* Pushes the held packets, if any, as one list. */
static GstFlowReturn
gst_rtp_batch_push_held (GstRtpBatch * self)
{
  GstBufferList *list = self->held;

  self->held = NULL;
  self->held_end = GST_CLOCK_TIME_NONE;
  /* a list is only made with its first packet, so a held list is never empty */
  if (list == NULL)
    return GST_FLOW_OK;
  GST_LOG_OBJECT (self, "pushing a list of %u packets",
      gst_buffer_list_length (list));
  return gst_pad_push_list (self->srcpad, list);
}

/* Whether @buffer continues the held packets without a gap in time. */
static gboolean
gst_rtp_batch_contiguous (GstRtpBatch * self, GstBuffer * buffer)
{
  GstClockTime pts = GST_BUFFER_PTS (buffer);
  GstClockTime duration = GST_BUFFER_DURATION (buffer);
  GstClockTime tolerance;

  if (GST_BUFFER_FLAG_IS_SET (buffer, GST_BUFFER_FLAG_DISCONT) ||
      GST_BUFFER_FLAG_IS_SET (buffer, GST_BUFFER_FLAG_RESYNC))
    return FALSE;
  if (!GST_CLOCK_TIME_IS_VALID (pts) || !GST_CLOCK_TIME_IS_VALID (duration) ||
      !GST_CLOCK_TIME_IS_VALID (self->held_end))
    return FALSE;
  tolerance = duration / 2;
  return pts + tolerance >= self->held_end && pts <= self->held_end + tolerance;
}

/* The latency the sinks wait: the LATENCY event's, else upstream's minimum
 * (asked once, not per packet: a graph that is not live never gets the event,
 * and a live one gets it before its sources produce). */
static GstClockTime
gst_rtp_batch_latency (GstRtpBatch * self)
{
  GstClockTime latency;
  GstQuery *q;

  GST_OBJECT_LOCK (self);
  latency = self->latency;
  GST_OBJECT_UNLOCK (self);
  if (GST_CLOCK_TIME_IS_VALID (latency))
    return latency;
  if (GST_CLOCK_TIME_IS_VALID (self->queried_latency))
    return self->queried_latency;
  q = gst_query_new_latency ();
  latency = 0;
  if (gst_pad_peer_query (self->sinkpad, q)) {
    gboolean live;
    GstClockTime min, max;
    gst_query_parse_latency (q, &live, &min, &max);
    if (live && GST_CLOCK_TIME_IS_VALID (min))
      latency = min;
  }
  gst_query_unref (q);
  self->queried_latency = latency;
  return latency;
}

/* Rewrites the RTP timestamp of @buffer to the media clock (see the top). */
static GstBuffer *
gst_rtp_batch_restamp (GstRtpBatch * self, GstBuffer * buffer)
{
  GstClockTime pts = GST_BUFFER_PTS (buffer);
  GstClockTime duration = GST_BUFFER_DURATION (buffer);
  GstClockTime running, t;
  guint64 ticks;
  guint32 stamp, samples;
  guint8 be[4];

  if (self->clock_rate <= 0 || !GST_CLOCK_TIME_IS_VALID (pts)
      || gst_buffer_get_size (buffer) < 12) {
    self->have_stamp = FALSE;
    return buffer;
  }
  running = gst_segment_to_running_time (&self->segment, GST_FORMAT_TIME,
      pts);
  if (!GST_CLOCK_TIME_IS_VALID (running)) {
    self->have_stamp = FALSE;
    return buffer;
  }
  t = gst_element_get_base_time (GST_ELEMENT (self)) + running +
      gst_rtp_batch_latency (self);
  ticks = gst_util_uint64_scale_int (t, self->clock_rate, GST_SECOND);
  stamp = (guint32) ticks;      /* mod 2^32 */
  samples = GST_CLOCK_TIME_IS_VALID (duration) ?
      (guint32) gst_util_uint64_scale_int_round (duration, self->clock_rate,
      GST_SECOND) : 0;

  if (self->have_stamp && GST_CLOCK_TIME_IS_VALID (self->last_end)
      && !GST_BUFFER_FLAG_IS_SET (buffer, GST_BUFFER_FLAG_DISCONT)) {
    GstClockTime tol = GST_CLOCK_TIME_IS_VALID (duration) ? duration / 2 : 0;
    guint32 expected = self->last_stamp + self->last_samples;
    gint32 diff = (gint32) (stamp - expected);
    if (pts + tol >= self->last_end && pts <= self->last_end + tol
        && diff >= -1 && diff <= 1)
      stamp = expected;
  }
  self->have_stamp = TRUE;
  self->last_stamp = stamp;
  self->last_samples = samples;
  self->last_end = GST_CLOCK_TIME_IS_VALID (duration) ? pts + duration :
      GST_CLOCK_TIME_NONE;

  buffer = gst_buffer_make_writable (buffer);
  be[0] = stamp >> 24;
  be[1] = stamp >> 16;
  be[2] = stamp >> 8;
  be[3] = stamp;
  gst_buffer_fill (buffer, 4, be, 4);
  return buffer;
}

static GstFlowReturn
gst_rtp_batch_chain (GstPad * pad, GstObject * parent, GstBuffer * buffer)
{
  GstRtpBatch *self = GST_RTP_BATCH (parent);
  GstFlowReturn ret = GST_FLOW_OK;
  GstClockTime pts = GST_BUFFER_PTS (buffer);
  GstClockTime duration = GST_BUFFER_DURATION (buffer);
  guint packets;
  gboolean media_clock;

  GST_OBJECT_LOCK (self);
  packets = self->packets;
  media_clock = self->media_clock;
  GST_OBJECT_UNLOCK (self);

  if (media_clock)
    buffer = gst_rtp_batch_restamp (self, buffer);

  if (self->held && !gst_rtp_batch_contiguous (self, buffer)) {
    ret = gst_rtp_batch_push_held (self);
    if (ret != GST_FLOW_OK) {
      gst_buffer_unref (buffer);
      return ret;
    }
  }

  if (packets <= 1 && self->held == NULL)
    return gst_pad_push (self->srcpad, buffer);

  if (self->held == NULL)
    self->held = gst_buffer_list_new_sized (packets);
  gst_buffer_list_add (self->held, buffer);
  self->held_end = GST_CLOCK_TIME_IS_VALID (pts) &&
      GST_CLOCK_TIME_IS_VALID (duration) ? pts + duration : GST_CLOCK_TIME_NONE;

  if (gst_buffer_list_length (self->held) >= packets)
    ret = gst_rtp_batch_push_held (self);
  return ret;
}

static gboolean
gst_rtp_batch_sink_event (GstPad * pad, GstObject * parent, GstEvent * event)
{
  GstRtpBatch *self = GST_RTP_BATCH (parent);

  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_FLUSH_STOP:
      gst_rtp_batch_drop_held (self);
      self->have_stamp = FALSE;
      break;
    case GST_EVENT_SEGMENT:
      if (self->held)
        (void) gst_rtp_batch_push_held (self);
      gst_event_copy_segment (event, &self->segment);
      self->have_stamp = FALSE;
      break;
    case GST_EVENT_CAPS:{
      GstCaps *caps;
      const GstStructure *s;
      if (self->held)
        (void) gst_rtp_batch_push_held (self);
      gst_event_parse_caps (event, &caps);
      s = gst_caps_get_structure (caps, 0);
      if (!gst_structure_get_int (s, "clock-rate", &self->clock_rate))
        self->clock_rate = 0;
      break;
    }
    default:
      /* held packets leave before any serialized event (EOS, SEGMENT, CAPS,
       * GAP, ...), so the event order downstream stays the data order */
      if (GST_EVENT_IS_SERIALIZED (event) && self->held)
        (void) gst_rtp_batch_push_held (self);
      break;
  }
  return gst_pad_event_default (pad, parent, event);
}

static gboolean
gst_rtp_batch_src_event (GstPad * pad, GstObject * parent, GstEvent * event)
{
  GstRtpBatch *self = GST_RTP_BATCH (parent);

  if (GST_EVENT_TYPE (event) == GST_EVENT_LATENCY) {
    GstClockTime latency;
    gst_event_parse_latency (event, &latency);
    GST_OBJECT_LOCK (self);
    self->latency = latency;
    GST_OBJECT_UNLOCK (self);
    GST_DEBUG_OBJECT (self, "the sinks wait %" GST_TIME_FORMAT,
        GST_TIME_ARGS (latency));
  }
  return gst_pad_event_default (pad, parent, event);
}

static GstStateChangeReturn
gst_rtp_batch_change_state (GstElement * element, GstStateChange transition)
{
  GstRtpBatch *self = GST_RTP_BATCH (element);
  GstStateChangeReturn ret;

  ret = GST_ELEMENT_CLASS (gst_rtp_batch_parent_class)->change_state (element,
      transition);

  switch (transition) {
    case GST_STATE_CHANGE_PAUSED_TO_READY:
      /* the pads are deactivated: no streaming thread runs any more */
      gst_rtp_batch_drop_held (self);
      self->have_stamp = FALSE;
      self->clock_rate = 0;
      self->queried_latency = GST_CLOCK_TIME_NONE;
      gst_segment_init (&self->segment, GST_FORMAT_UNDEFINED);
      GST_OBJECT_LOCK (self);
      self->latency = GST_CLOCK_TIME_NONE;
      GST_OBJECT_UNLOCK (self);
      break;
    default:
      break;
  }
  return ret;
}
