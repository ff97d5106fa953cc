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
 * Threading: `packets` is read under the object lock; the held list is only
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

  /* property, under the object lock */
  guint packets;

  /* streaming thread only (see the threading note above) */
  GstBufferList *held;
  GstClockTime held_end;        /* PTS + duration of the last held packet */
};

enum
{
  PROP_0,
  PROP_PACKETS
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

static GstFlowReturn
gst_rtp_batch_chain (GstPad * pad, GstObject * parent, GstBuffer * buffer)
{
  GstRtpBatch *self = GST_RTP_BATCH (parent);
  GstFlowReturn ret = GST_FLOW_OK;
  GstClockTime pts = GST_BUFFER_PTS (buffer);
  GstClockTime duration = GST_BUFFER_DURATION (buffer);
  guint packets;

  GST_OBJECT_LOCK (self);
  packets = self->packets;
  GST_OBJECT_UNLOCK (self);

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
      break;
    default:
      /* held packets leave before any serialized event (EOS, SEGMENT, CAPS,
       * GAP, ...), so the event order downstream stays the data order */
      if (GST_EVENT_IS_SERIALIZED (event) && self->held)
        (void) gst_rtp_batch_push_held (self);
      break;
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
      break;
    default:
      break;
  }
  return ret;
}
