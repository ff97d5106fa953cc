/* The drift's uncertainty (clock_drift_estimate, drift.h) against the
 * truth: readings once per second of arrival time from FROM_S on, each
 * one counted as covered when |estimate - truth| <= its half-width.
 *
 *   test-clock-drift-coverage RECORDING...
 *
 * The recordings (arrivals/: "<us after the previous write> <frames>" per
 * write) are of senders on the receiver's clock: truth 0 ppm, and, each
 * arrival time divided by 1 + 500e-6, +500 ppm (as test-clock-replay's
 * --ppm).  Synthetic senders at +1000 and -1000 ppm (1024 frames a write
 * at 48 kHz for SYNTH_S, each write late by a one-sided random amount of up
 * to 5 ms, and a slow wander of 3 ms over minutes, from a seeded PRNG of
 * this file) join them.  Checked:
 *   - the readings with an estimate covered, over all of them, at least
 *     MIN_COVER (a reading without one, while the input arrives starved,
 *     its slope beyond CLOCK_DRIFT_MAX_RATE, is counted and printed);
 *   - the half-width at the end of each sender is less than the largest of
 *     its first SHRINK_READINGS (it shrinks as the line grows);
 *   - a synthetic sender has an estimate at every reading from FROM_S on,
 *     and reads within its half-width and within FAST_TOL_PPM of the truth
 *     at every reading from FAST_S on. */
#include "arrivals.h"
#include "drift.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define RATE 48000
#define FROM_S 10.0
#define MIN_COVER 0.95
#define FAST_S 20.0
#define FAST_TOL_PPM 100.0
#define SYNTH_S 300.0
#define SHRINK_READINGS 30

static int failures;

#define CHECK(cond, ...) do { if (!(cond)) { failures++; \
  fprintf (stderr, "FAIL: " __VA_ARGS__); fprintf (stderr, "\n"); } } while (0)

static unsigned total, covered;

/* xorshift64*: the same sequence on every run */
static unsigned long long prng = 0x9E3779B97F4A7C15ull;

static double
uniform (void)
{
  prng ^= prng >> 12;
  prng ^= prng << 25;
  prng ^= prng >> 27;
  return (double) ((prng * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}

/* a sender at (1 + ppm 1e-6) x the output clock: write k's audio ends at
 * (k + 1) 1024 / RATE / (1 + ppm 1e-6), arriving 0..5 ms late plus a
 * wander of 1.5 (1 - cos) ms with a period of 170 s */
static Write *
synthesize (double ppm, size_t *n)
{
  double dt = 1024.0 / RATE / (1.0 + ppm * 1e-6);
  size_t count = (size_t) (SYNTH_S / dt);
  Write *w = malloc (count * sizeof (*w));
  double last = 0.0;

  if (w == NULL)
    return NULL;
  for (size_t k = 0; k < count; k++) {
    double due = (k + 1) * dt;
    double t = due + 0.005 * uniform () * uniform ();
    if (t < last)               /* queued behind a late write */
      t = last;
    w[k].t = last = t;
    w[k].frames = 1024;
  }
  *n = count;
  return w;
}

/* the readings of one sender: once per second of arrival time from the
 * first write, from FROM_S on; fast: the +-1000 ppm bound applies */
static void
replay (const char *name, const Write * w, size_t n, double truth_ppm,
    int fast)
{
  ClockDrift d;
  double next = FROM_S, first_half = 0.0, last_half = NAN, worst = 0.0;
  unsigned mine = 0, in = 0, unknown = 0;

  clock_drift_init (&d);
  for (size_t i = 0; i < n; i++) {
    double t = w[i].t - w[0].t, rate, half;
    clock_drift_note (&d, w[i].t, w[i].frames, RATE);
    if (t < next)
      continue;
    next += 1.0;
    if (!clock_drift_estimate (&d, &rate, &half)) {
      unknown++;
      CHECK (!fast, "%s: no estimate at %.0f s", name, t);
      continue;
    }
    rate *= 1e6;
    half *= 1e6;
    if (mine < SHRINK_READINGS)
      first_half = fmax (first_half, half);
    last_half = half;
    mine++;
    in += fabs (rate - truth_ppm) <= half;
    worst = fmax (worst, fabs (rate - truth_ppm) - half);
    if (fast && t >= FAST_S)
      CHECK (fabs (rate - truth_ppm) <= half
          && fabs (rate - truth_ppm) <= FAST_TOL_PPM,
          "%s: %+.1f ppm +- %.1f at %.0f s (truth %+.0f)", name, rate, half,
          t, truth_ppm);
  }
  printf ("%-24s %+6.0f ppm: %4u readings (%3u unknown), %5.1f %% covered, "
      "half-width %6.1f -> %5.1f ppm, worst outside by %6.1f ppm\n", name,
      truth_ppm, mine, unknown, mine ? 100.0 * in / mine : 0.0, first_half,
      last_half, worst);
  CHECK (mine > 0 && last_half < first_half,
      "%s: the half-width did not shrink (%.1f -> %.1f ppm)", name,
      first_half, last_half);
  total += mine;
  covered += in;
}

int
main (int argc, char **argv)
{
  static const double synth[] = { 1000.0, -1000.0 };
  static const double scaled[] = { 0.0, 500.0 };

  if (argc < 2) {
    fprintf (stderr, "usage: test-clock-drift-coverage RECORDING...\n");
    return 2;
  }
  for (int a = 1; a < argc; a++)
    for (unsigned s = 0; s < 2; s++) {
      size_t n;
      Write *w = arrivals_load (argv[a], 1.0 + scaled[s] * 1e-6, NULL, &n);
      const char *base = argv[a];
      for (const char *c = argv[a]; *c; c++)
        if (*c == '/')
          base = c + 1;
      if (w == NULL || n == 0) {
        CHECK (0, "%s: cannot read it", argv[a]);
        free (w);
        continue;
      }
      replay (base, w, n, scaled[s], 0);
      free (w);
    }
  for (unsigned s = 0; s < 2; s++) {
    size_t n;
    Write *w = synthesize (synth[s], &n);
    CHECK (w != NULL, "out of memory");
    if (w != NULL)
      replay (synth[s] > 0 ? "synthetic +1000" : "synthetic -1000", w, n,
          synth[s], 1);
    free (w);
  }
  printf ("all: %u readings from %.0f s on, %u (%.2f %%) within their "
      "half-width\n", total, FROM_S, covered, total ? 100.0 * covered / total
      : 0.0);
  CHECK (total > 0 && covered >= MIN_COVER * total,
      "%.2f %% of the readings within their half-width (bound %.0f %%)",
      total ? 100.0 * covered / total : 0.0, 100.0 * MIN_COVER);
  if (failures)
    fprintf (stderr, "%d failure(s)\n", failures);
  return failures ? 1 : 0;
}
