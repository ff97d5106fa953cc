/* pipelinestats: placeholder, full element follows. */
#include <gst/gst.h>

#define GST_TYPE_PIPELINE_STATS (gst_pipeline_stats_get_type ())
G_DECLARE_FINAL_TYPE (GstPipelineStats, gst_pipeline_stats, GST, PIPELINE_STATS, GstElement)

struct _GstPipelineStats
{
  GstElement parent;
};

G_DEFINE_TYPE (GstPipelineStats, gst_pipeline_stats, GST_TYPE_ELEMENT);
GST_ELEMENT_REGISTER_DEFINE (pipelinestats, "pipelinestats", GST_RANK_NONE,
    GST_TYPE_PIPELINE_STATS);

static void
gst_pipeline_stats_class_init (GstPipelineStatsClass * klass)
{
  gst_element_class_set_static_metadata (GST_ELEMENT_CLASS (klass),
      "Pipeline statistics", "Utility",
      "Reads sibling elements' counters and posts them as one element message",
      "audio-engine");
}

static void
gst_pipeline_stats_init (GstPipelineStats * self)
{
}
