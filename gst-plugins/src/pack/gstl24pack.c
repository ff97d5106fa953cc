/* l24pack: interleaved F32LE to the S24BE that rtpL24pay carries.
 *
 * Example:
 *   gst-launch-1.0 audiotestsrc ! audio/x-raw,format=F32LE ! l24pack ! \
 *       rtpL24pay ! udpsink host=127.0.0.1 port=5004
 *
 * The graph's last step hands the payloader F32; audioconvert made the
 * S24BE before, in the clock bridge's output thread, once per 4 ms chunk,
 * through GstAudioConverter's general path (unpack to a wider format,
 * quantize, pack: 9 900 instructions a chunk of 192 stereo frames,
 * bench/chunk-instructions.sh).  This element writes the same bytes in one
 * pass (pack.c: rounding and clipping as audioconvert's, which does not
 * dither at 24 bits): 5 100 instructions, its buffer maps included.  Rate,
 * channels and channel mask pass unchanged; only the format differs
 * between the pads.
 *
 * Structure after gst-plugins-base's audioconvert (a GstBaseTransform that
 * is never in place, transform_caps swapping the format field, unit sizes
 * from the caps); no properties.
 */
#include <gst/gst.h>
#include <gst/base/gstbasetransform.h>

#include <string.h>

#include "pack.h"

GST_DEBUG_CATEGORY_STATIC (l24_pack_debug);
#define GST_CAT_DEFAULT l24_pack_debug

#define IN_FORMAT "F32LE"
#define OUT_FORMAT "S24BE"
#define CAPS(format) \
    "audio/x-raw, format = (string) " format ", rate = (int) [ 1, MAX ], " \
    "channels = (int) [ 1, MAX ], layout = (string) interleaved"

#define GST_TYPE_L24_PACK (gst_l24_pack_get_type ())
G_DECLARE_FINAL_TYPE (GstL24Pack, gst_l24_pack, GST, L24_PACK,
    GstBaseTransform);

struct _GstL24Pack
{
  GstBaseTransform parent;
};

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS (CAPS (IN_FORMAT)));
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS (CAPS (OUT_FORMAT)));

G_DEFINE_TYPE (GstL24Pack, gst_l24_pack, GST_TYPE_BASE_TRANSFORM);
GST_ELEMENT_REGISTER_DEFINE (l24pack, "l24pack", GST_RANK_NONE,
    GST_TYPE_L24_PACK);

/* the caps on the other pad: the same with the other side's format */
static GstCaps *
gst_l24_pack_transform_caps (GstBaseTransform * base, GstPadDirection direction,
    GstCaps * caps, GstCaps * filter)
{
  const gchar *format = direction == GST_PAD_SINK ? OUT_FORMAT : IN_FORMAT;
  GstCaps *res = gst_caps_copy (caps);

  for (guint i = 0; i < gst_caps_get_size (res); i++) {
    GstStructure *s = gst_caps_get_structure (res, i);
    gst_structure_set (s, "format", G_TYPE_STRING, format, NULL);
  }
  if (filter) {
    GstCaps *both =
        gst_caps_intersect_full (filter, res, GST_CAPS_INTERSECT_FIRST);
    gst_caps_unref (res);
    res = both;
  }
  return res;
}

/* bytes per frame: 4 a sample in, 3 out */
static gboolean
gst_l24_pack_get_unit_size (GstBaseTransform * base, GstCaps * caps,
    gsize * size)
{
  GstStructure *s = gst_caps_get_structure (caps, 0);
  const gchar *format = gst_structure_get_string (s, "format");
  gint channels;

  if (!format || !gst_structure_get_int (s, "channels", &channels)
      || channels < 1)
    return FALSE;
  *size = (gsize) channels * (strcmp (format, IN_FORMAT) == 0 ? 4 : 3);
  return TRUE;
}

static GstFlowReturn
gst_l24_pack_transform (GstBaseTransform * base, GstBuffer * inbuf,
    GstBuffer * outbuf)
{
  GstMapInfo in, out;
  gsize samples;

  if (!gst_buffer_map (inbuf, &in, GST_MAP_READ))
    return GST_FLOW_ERROR;
  if (!gst_buffer_map (outbuf, &out, GST_MAP_WRITE)) {
    gst_buffer_unmap (inbuf, &in);
    return GST_FLOW_ERROR;
  }
  samples = in.size / sizeof (float);
  if (out.size < samples * 3) {
    gst_buffer_unmap (outbuf, &out);
    gst_buffer_unmap (inbuf, &in);
    GST_ELEMENT_ERROR (base, STREAM, FAILED, (NULL),
        ("output buffer of %" G_GSIZE_FORMAT " bytes for %" G_GSIZE_FORMAT
            " samples", out.size, samples));
    return GST_FLOW_ERROR;
  }
  pack_f32_s24be ((const float *) in.data, out.data, samples);
  gst_buffer_unmap (outbuf, &out);
  gst_buffer_unmap (inbuf, &in);
  return GST_FLOW_OK;
}

static void
gst_l24_pack_class_init (GstL24PackClass * klass)
{
  GstElementClass *element_class = (GstElementClass *) klass;
  GstBaseTransformClass *trans_class = (GstBaseTransformClass *) klass;

  GST_DEBUG_CATEGORY_INIT (l24_pack_debug, "l24pack", 0,
      "F32LE to S24BE for RTP L24");

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class,
      "L24 packer", "Filter/Converter/Audio",
      "Interleaved F32LE to S24BE in one pass, byte for byte as audioconvert",
      "Audio Pipeline Engine");

  trans_class->transform_caps = GST_DEBUG_FUNCPTR (gst_l24_pack_transform_caps);
  trans_class->get_unit_size = GST_DEBUG_FUNCPTR (gst_l24_pack_get_unit_size);
  trans_class->transform = GST_DEBUG_FUNCPTR (gst_l24_pack_transform);
  trans_class->passthrough_on_same_caps = FALSE;
}

static void
gst_l24_pack_init (GstL24Pack * self)
{
}
