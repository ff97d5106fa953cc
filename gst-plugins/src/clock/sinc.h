/* sinc: the clock bridge's fractional interpolator (pure C, no GStreamer types).
 *
 * A Kaiser-windowed sinc of CLOCK_SINC_TAPS taps (cut-off at half the sample
 * rate, beta CLOCK_SINC_BETA), tabulated at CLOCK_SINC_PHASES fractional
 * positions per sample; the coefficients for a position between two table
 * rows are interpolated linearly.  Each row is normalised to unit DC gain.
 *
 * Meant for ratios near 1 (a clock bridge: +-0.5 %): the kernel is not
 * widened for down-sampling.  Measured (tests/clock/test_resampler.c) at
 * 1 +- 100 ppm and 1 +- 1000 ppm: a 997 Hz tone at -20 dBFS comes out with
 * its THD+N 142 dB below the tone; the response is flat within 0.0005 dB
 * to 20 kHz; a 20 kHz tone's image (at 28 kHz, folded back) is 87 dB down.
 *
 * Position convention: the output at position i + frac (0 <= frac < 1)
 * reads the taps x[i - HALF + 1] .. x[i + HALF] (see resampler.c). */
#ifndef CLOCK_SINC_H
#define CLOCK_SINC_H

#define CLOCK_SINC_HALF 24
#define CLOCK_SINC_TAPS (2 * CLOCK_SINC_HALF)
#define CLOCK_SINC_PHASES 256
#define CLOCK_SINC_BETA 14.0

typedef struct
{
  /* row p: the kernel at frac = p / PHASES; rows 0 .. PHASES */
  float coef[CLOCK_SINC_PHASES + 1][CLOCK_SINC_TAPS];
  /* row p + 1 minus row p, for the linear interpolation between rows */
  float delta[CLOCK_SINC_PHASES][CLOCK_SINC_TAPS];
} ClockSinc;

void clock_sinc_init (ClockSinc * s);

#endif
