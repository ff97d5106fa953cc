/* sinc: the clock bridge's fractional interpolator (pure C, no GStreamer types).
 *
 * A Kaiser-windowed sinc of CLOCK_SINC_TAPS taps (cut-off at half the sample
 * rate, beta CLOCK_SINC_BETA), tabulated at CLOCK_SINC_PHASES fractional
 * positions per sample; the coefficients for a position between two table
 * rows are interpolated linearly.  Each row is normalised to unit DC gain.
 *
 * Meant for ratios near 1 (a clock bridge: +-0.5 %): the kernel is not
 * widened for down-sampling.  Measured (tests/clock/test_resampler.c):
 * flat within +-0.0005 dB to 20 kHz, stop band below -110 dB from 28 kHz,
 * so a 997 Hz tone comes out with its THD+N more than 120 dB down.
 *
 * Position convention: the output at position i + frac (0 <= frac < 1)
 * reads the taps x[i - HALF + 1] .. x[i + HALF]; clock_sinc_coefs() fills
 * the coefficients for frac, clock_sinc_dot() applies them to the first of
 * those samples. */
#ifndef CLOCK_SINC_H
#define CLOCK_SINC_H

#define CLOCK_SINC_HALF 24
#define CLOCK_SINC_TAPS (2 * CLOCK_SINC_HALF)
#define CLOCK_SINC_PHASES 256
#define CLOCK_SINC_BETA 11.0

typedef struct
{
  /* row p: the kernel at frac = p / PHASES; rows 0 .. PHASES */
  float coef[CLOCK_SINC_PHASES + 1][CLOCK_SINC_TAPS];
  /* row p + 1 minus row p, for the linear interpolation between rows */
  float delta[CLOCK_SINC_PHASES][CLOCK_SINC_TAPS];
} ClockSinc;

void clock_sinc_init (ClockSinc * s);
/* the TAPS coefficients for the position frac (0 <= frac < 1) */
void clock_sinc_coefs (const ClockSinc * s, double frac, float *c);
/* sum of c[j] * x[j], j < TAPS */
float clock_sinc_dot (const float *c, const float *x);

#endif
