/* The clock bridge's resampler alone (resampler.c, sinc.c, fifo.c; no
 * GStreamer), at ratios 1, 1 +- 100 ppm and 1 +- 1000 ppm.
 *
 * The input is a sine of frequency f at -20 dBFS; with ratio r input frames
 * per output frame the analytic output is the sine at f * r, sample n
 * taken at input position n * r + p0.  Each output is fitted by least
 * squares at that known frequency (cos, sin, DC); the residual is all that
 * is not the tone.
 *   THD+N: 997 Hz, residual RMS / tone RMS must be <= -96 dB;
 *   frequency response: stepped sines 20 Hz .. 20 kHz, fitted amplitude
 *   within +-0.05 dB of the input's (and the 20 kHz THD+N printed).
 * Prints every figure. */
#include "resampler.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define RATE 48000.0
#define IN_FRAMES 96000         /* 2 s */
#define SKIP 64                 /* output frames before the kernel is full */
#define AMPLITUDE 0.1           /* -20 dBFS */

static int failures;

/* least-squares fit of a cos + b sin + c at w rad/sample; returns the
 * fitted amplitude, *resid_db = residual RMS / tone RMS in dB */
static double
fit_tone (const float *y, size_t n, double w, double *resid_db)
{
  double s[3][3] = { {0} }, v[3] = { 0 }, x[3], r2 = 0.0, amp;

  for (size_t i = 0; i < n; i++) {
    double bas[3] = { cos (w * i), sin (w * i), 1.0 };
    for (int a = 0; a < 3; a++) {
      v[a] += bas[a] * y[i];
      for (int b = 0; b < 3; b++)
        s[a][b] += bas[a] * bas[b];
    }
  }
  /* Gaussian elimination on the 3x3 normal equations */
  for (int p = 0; p < 3; p++)
    for (int q = p + 1; q < 3; q++) {
      double m = s[q][p] / s[p][p];
      for (int k = 0; k < 3; k++)
        s[q][k] -= m * s[p][k];
      v[q] -= m * v[p];
    }
  for (int p = 2; p >= 0; p--) {
    double acc = v[p];
    for (int k = p + 1; k < 3; k++)
      acc -= s[p][k] * x[k];
    x[p] = acc / s[p][p];
  }
  for (size_t i = 0; i < n; i++) {
    double e = y[i] - (x[0] * cos (w * i) + x[1] * sin (w * i) + x[2]);
    r2 += e * e;
  }
  amp = hypot (x[0], x[1]);
  *resid_db = 10.0 * log10 ((r2 / n) / (amp * amp / 2.0) + 1e-30);
  return amp;
}

/* resamples a sine of freq Hz at ratio; returns the output frames */
static size_t
run (ClockResampler * r, double freq, double ratio, float *out, size_t cap)
{
  ClockFifo f;
  float *in = malloc (sizeof (float) * IN_FRAMES);
  size_t n;

  for (size_t i = 0; i < IN_FRAMES; i++)
    in[i] = (float) (AMPLITUDE * sin (2 * M_PI * freq * i / RATE + 0.3));
  clock_fifo_init (&f, 1, IN_FRAMES);
  clock_fifo_write (&f, in, IN_FRAMES);
  r->frac = 0.0;
  n = clock_resampler_run (r, &f, ratio, out, cap);
  clock_fifo_clear (&f);
  free (in);
  return n;
}

int
main (void)
{
  static ClockResampler r;
  const double ppms[] = { 0, 100, -100, 1000, -1000 };
  const double freqs[] = { 20, 100, 997, 5000, 10000, 15000, 18000, 19000,
    19500, 20000
  };
  size_t cap = IN_FRAMES * 2;
  float *out = malloc (sizeof (float) * cap);

  clock_resampler_init (&r);
  for (size_t p = 0; p < sizeof (ppms) / sizeof (ppms[0]); p++) {
    double ratio = 1.0 + ppms[p] * 1e-6, worst_dev = 0.0, worst_thd = -1e9;

    for (size_t k = 0; k < sizeof (freqs) / sizeof (freqs[0]); k++) {
      double f = freqs[k], thd, amp, dev;
      size_t n = run (&r, f, ratio, out, cap);
      /* output sample n sits at input position (CLOCK_SINC_HALF - 1) + n r */
      double w = 2 * M_PI * f * ratio / RATE;

      amp = fit_tone (out + SKIP, n - SKIP, w, &thd);
      dev = 20.0 * log10 (amp / AMPLITUDE);
      if (fabs (dev) > fabs (worst_dev))
        worst_dev = dev;
      if (f == 997.0) {
        printf ("ratio 1%+.4f (%+5.0f ppm): 997 Hz at -20 dBFS: THD+N %.1f dB "
            "below the tone\n", ratio - 1.0, ppms[p], -thd);
        if (thd > -96.0) {
          printf ("FAIL: THD+N %.1f dB > -96 dB\n", thd);
          failures++;
        }
      }
      if (thd > worst_thd)
        worst_thd = thd;
      if (fabs (dev) > 0.05) {
        printf ("FAIL: %.0f Hz at %+.0f ppm: %+.4f dB\n", f, ppms[p], dev);
        failures++;
      }
    }
    printf ("ratio 1%+.4f (%+5.0f ppm): response 20 Hz..20 kHz within "
        "%+.5f dB; worst THD+N over those tones %.1f dB below the tone\n",
        ratio - 1.0, ppms[p], worst_dev, -worst_thd);
  }
  free (out);
  printf ("%s\n", failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
