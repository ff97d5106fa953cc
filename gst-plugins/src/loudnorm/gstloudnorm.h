/* loudnorm: EBU R128 loudness normaliser with a true-peak limiter. */
#ifndef GST_LOUDNORM_H
#define GST_LOUDNORM_H

#include <gst/gst.h>
#include <gst/audio/gstaudiofilter.h>

#include "gainlaw.h"
#include "limiter.h"
#include "meter.h"

G_BEGIN_DECLS

#define GST_TYPE_LOUDNORM (gst_loudnorm_get_type ())
G_DECLARE_FINAL_TYPE (GstLoudnorm, gst_loudnorm, GST, LOUDNORM, GstAudioFilter)

struct _GstLoudnorm
{
  GstAudioFilter parent;

  /* properties, under the object lock */
  gdouble target;
  gdouble true_peak;
  gdouble max_gain;
  gboolean post_messages;
  guint64 interval;
  GstClockTime latency;         /* ours, set at caps; under the object lock */

  /* reset-measurement: RESET_IDLE, RESET_REQUESTED (by the setter, any
   * thread) or RESET_RUNNING (the input measurement restarted, the output's
   * follows); atomic */
  gint reset_state;

  /* streaming state */
  guint rate, channels;
  LnMeter *in_meter, *out_meter;
  LnLimiter *limiter;
  LnGainLaw gain;
  gdouble applied_target, applied_max_gain, applied_ceiling;
  gdouble cur_lin;              /* linear normalisation gain now applied */
  gboolean target_moved;        /* target changed: forget the output window once settled */
  guint64 frames_in;            /* input frames since start / flush */
  guint64 msg_frames;           /* frames in the current message interval */
  GstClockTime msg_ts;          /* timestamp of its first frame */
  GstClockTime next_ts;         /* end of the last input buffer */
  gboolean need_drain;
  gint64 out_reset_in;          /* frames until the output measurement restarts;
                                 * -1: none due */
};

GST_ELEMENT_REGISTER_DECLARE (loudnorm);

G_END_DECLS
#endif
