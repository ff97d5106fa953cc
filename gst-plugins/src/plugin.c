/* The audioengine GStreamer plugin: the engine's own processing elements.
 *
 *   loudnorm      EBU R128 loudness normaliser with a true-peak limiter
 *   parametriceq  cascade of RBJ peaking biquads
 *   pipelinestats reads its sibling elements' counters and posts them as one message
 *   rtpbatch      groups RTP packets into buffer lists: the sink wakes once per list
 *   srtaccess     sets srtsrc's passphrase from a descriptor; reports refused callers
 *   enginecontrol sets sibling elements' properties from commands on a descriptor
 */
#include <gst/gst.h>

GST_ELEMENT_REGISTER_DECLARE (loudnorm);
GST_ELEMENT_REGISTER_DECLARE (parametriceq);
GST_ELEMENT_REGISTER_DECLARE (pipelinestats);
GST_ELEMENT_REGISTER_DECLARE (rtpbatch);
GST_ELEMENT_REGISTER_DECLARE (srtaccess);
GST_ELEMENT_REGISTER_DECLARE (enginecontrol);

static gboolean
plugin_init (GstPlugin * plugin)
{
  gboolean ok = FALSE;

  ok |= GST_ELEMENT_REGISTER (loudnorm, plugin);
  ok |= GST_ELEMENT_REGISTER (parametriceq, plugin);
  ok |= GST_ELEMENT_REGISTER (pipelinestats, plugin);
  ok |= GST_ELEMENT_REGISTER (rtpbatch, plugin);
  ok |= GST_ELEMENT_REGISTER (srtaccess, plugin);
  ok |= GST_ELEMENT_REGISTER (enginecontrol, plugin);
  return ok;
}

GST_PLUGIN_DEFINE (GST_VERSION_MAJOR, GST_VERSION_MINOR, audioengine,
    "Audio Pipeline Engine processing elements", plugin_init, VERSION,
    GST_LICENSE, GST_PACKAGE_NAME, GST_PACKAGE_ORIGIN)
