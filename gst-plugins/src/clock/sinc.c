/* sinc: see sinc.h. */
#include "sinc.h"

#include <math.h>

/* modified Bessel function of the first kind, order 0 (power series) */
static double
bessel_i0 (double x)
{
  double sum = 1.0, term = 1.0, q = x * x / 4.0;

  for (int k = 1; k < 200; k++) {
    term *= q / ((double) k * k);
    sum += term;
    if (term < sum * 1e-17)
      break;
  }
  return sum;
}

/* the continuous kernel at t samples from the output position */
static double
kernel (double t)
{
  double x = t / CLOCK_SINC_HALF, sinc;

  if (fabs (x) >= 1.0)
    return 0.0;
  sinc = t == 0.0 ? 1.0 : sin (M_PI * t) / (M_PI * t);
  return sinc * bessel_i0 (CLOCK_SINC_BETA * sqrt (1.0 - x * x)) /
      bessel_i0 (CLOCK_SINC_BETA);
}

void
clock_sinc_init (ClockSinc * s)
{
  for (int p = 0; p <= CLOCK_SINC_PHASES; p++) {
    double frac = (double) p / CLOCK_SINC_PHASES, row[CLOCK_SINC_TAPS], sum = 0;

    for (int j = 0; j < CLOCK_SINC_TAPS; j++) {
      row[j] = kernel ((j - CLOCK_SINC_HALF + 1) - frac);
      sum += row[j];
    }
    for (int j = 0; j < CLOCK_SINC_TAPS; j++)
      s->coef[p][j] = (float) (row[j] / sum);
  }
  for (int p = 0; p < CLOCK_SINC_PHASES; p++)
    for (int j = 0; j < CLOCK_SINC_TAPS; j++)
      s->delta[p][j] = s->coef[p + 1][j] - s->coef[p][j];
}
