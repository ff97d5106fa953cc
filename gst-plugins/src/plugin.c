/* The audioengine GStreamer plugin: the engine's own processing elements.
 *
 *   loudnorm      EBU R128 loudness normaliser with a true-peak limiter
 *   parametriceq  cascade of RBJ peaking biquads
 */
#include <gst/gst.h>

GST_ELEMENT_REGISTER_DECLARE (loudnorm);
GST_ELEMENT_REGISTER_DECLARE (parametriceq);

static gboolean
plugin_init (GstPlugin * plugin)
{
  gboolean ok = FALSE;

  ok |= GST_ELEMENT_REGISTER (loudnorm, plugin);
  ok |= GST_ELEMENT_REGISTER (parametriceq, plugin);
  return ok;
}

GST_PLUGIN_DEFINE (GST_VERSION_MAJOR, GST_VERSION_MINOR, audioengine,
    "Audio Pipeline Engine processing elements", plugin_init, VERSION,
    GST_LICENSE, GST_PACKAGE_NAME, GST_PACKAGE_ORIGIN)
