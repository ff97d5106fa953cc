/* The audioengine GStreamer plugin: the engine's own processing elements.
 *
 *   loudnorm      EBU R128 loudness normaliser with a true-peak limiter
 *   parametriceq  cascade of RBJ peaking biquads
 *   pipelinestats reads its sibling elements' counters and posts them as one message
 *   rtpbatch      groups RTP packets into buffer lists: the sink wakes once per list
 *   srtaccess     sets srtsrc's passphrase from a descriptor; reports refused callers
 *   clockbridge   crosses from the sender's clock to the pipeline clock (adaptive resampler)
 *   chaindecode   decodebin behind one src pad that follows new chains (chained Ogg)
 *   enginecontrol sets sibling elements' properties from commands on a descriptor
 *   aacframer     ADTS AAC to raw frames, each passed on as soon as it is complete
 *   l24pack       F32LE to the S24BE of RTP L24, in one pass
 */
#include <gst/gst.h>

GST_ELEMENT_REGISTER_DECLARE (loudnorm);
GST_ELEMENT_REGISTER_DECLARE (parametriceq);
GST_ELEMENT_REGISTER_DECLARE (pipelinestats);
GST_ELEMENT_REGISTER_DECLARE (rtpbatch);
GST_ELEMENT_REGISTER_DECLARE (srtaccess);
GST_ELEMENT_REGISTER_DECLARE (clockbridge);
GST_ELEMENT_REGISTER_DECLARE (chaindecode);
GST_ELEMENT_REGISTER_DECLARE (enginecontrol);
GST_ELEMENT_REGISTER_DECLARE (aacframer);
GST_ELEMENT_REGISTER_DECLARE (l24pack);

static gboolean
plugin_init (GstPlugin * plugin)
{
  gboolean ok = FALSE;

  ok |= GST_ELEMENT_REGISTER (loudnorm, plugin);
  ok |= GST_ELEMENT_REGISTER (parametriceq, plugin);
  ok |= GST_ELEMENT_REGISTER (pipelinestats, plugin);
  ok |= GST_ELEMENT_REGISTER (rtpbatch, plugin);
  ok |= GST_ELEMENT_REGISTER (srtaccess, plugin);
  ok |= GST_ELEMENT_REGISTER (clockbridge, plugin);
  ok |= GST_ELEMENT_REGISTER (chaindecode, plugin);
  ok |= GST_ELEMENT_REGISTER (enginecontrol, plugin);
  ok |= GST_ELEMENT_REGISTER (aacframer, plugin);
  ok |= GST_ELEMENT_REGISTER (l24pack, plugin);
  return ok;
}

GST_PLUGIN_DEFINE (GST_VERSION_MAJOR, GST_VERSION_MINOR, audioengine,
    "Audio Pipeline Engine processing elements", plugin_init, VERSION,
    GST_LICENSE, GST_PACKAGE_NAME, GST_PACKAGE_ORIGIN)
