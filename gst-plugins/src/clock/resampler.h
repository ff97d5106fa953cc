/* resampler: the clock bridge's fractional resampler (pure C, no GStreamer
 * types): reads a planar FIFO (fifo.h) with the windowed-sinc interpolator
 * of sinc.h at a ratio the caller sets (input frames per output frame).
 *
 * The interpolation point is fifo start + CLOCK_SINC_HALF - 1 + frac: the
 * FIFO keeps CLOCK_SINC_HALF - 1 frames of history behind it and needs
 * CLOCK_SINC_HALF frames ahead of it.  Frames behind the history are
 * dropped from the FIFO as the point moves on.
 *
 * Cost per output frame: CLOCK_SINC_TAPS multiply-adds for the
 * coefficients (shared by the channels) plus CLOCK_SINC_TAPS per channel. */
#ifndef CLOCK_RESAMPLER_H
#define CLOCK_RESAMPLER_H

#include "fifo.h"
#include "sinc.h"

#include <stddef.h>

typedef struct
{
  ClockSinc sinc;
  double frac;                  /* 0 <= frac < 1 */
  float coefs[CLOCK_SINC_TAPS];
} ClockResampler;

void clock_resampler_init (ClockResampler * r);
/* output frames the FIFO can give now (at ratio 1) */
static inline int
clock_resampler_can_read (const ClockFifo * f)
{
  return clock_fifo_frames (f) >= 2 * CLOCK_SINC_HALF;
}
/* writes up to frames interleaved output frames, advancing ratio input
 * frames per output frame (0 < ratio < 2); returns the frames written (fewer when the FIFO
 * runs dry) */
size_t clock_resampler_run (ClockResampler * r, ClockFifo * f, double ratio,
    float *out, size_t frames);
/* frames from the interpolation point to the newest frame (0 if fewer) */
double clock_resampler_ahead (const ClockResampler * r, const ClockFifo * f);

#endif
