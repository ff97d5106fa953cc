/* resampler: see resampler.h. */
#include "resampler.h"

#include <math.h>

void
clock_resampler_init (ClockResampler * r)
{
  clock_sinc_init (&r->sinc);
  r->frac = 0.0;
}

size_t
clock_resampler_run (ClockResampler * r, ClockFifo * f, double ratio,
    float *out, size_t frames)
{
  unsigned ch = f->channels;
  size_t k;

  for (k = 0; k < frames && clock_resampler_can_read (f); k++) {
    double step;

    clock_sinc_coefs (&r->sinc, r->frac, r->coefs);
    for (unsigned c = 0; c < ch; c++)
      out[k * ch + c] = clock_sinc_dot (r->coefs, clock_fifo_channel (f, c));
    r->frac += ratio;
    step = floor (r->frac);
    r->frac -= step;
    clock_fifo_drop (f, (size_t) step);
  }
  return k;
}

double
clock_resampler_ahead (const ClockResampler * r, const ClockFifo * f)
{
  double n = (double) clock_fifo_frames (f) - (CLOCK_SINC_HALF - 1);

  return n > r->frac ? n - r->frac : 0.0;
}
