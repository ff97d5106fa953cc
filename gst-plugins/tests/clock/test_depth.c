/* The saw-tooth depth estimator alone (depth.c), on synthetic dips and
 * windows: a 20 ms target, at most CLOCK_BRIDGE_MAX_DEPTH_S.  Checked:
 *   - dips of a regular pattern (256 from 10 ms to 12.55 ms, in a random
 *     order): D is their CLOCK_BRIDGE_DIP_QUANTILE quantile, known only
 *     once a window of CLOCK_BRIDGE_SWING_WINDOW_S is complete;
 *   - one rare deep dip among them raises D to CLOCK_BRIDGE_DIP_SPREAD x
 *     its distance from the quantile + CLOCK_BRIDGE_DIP_GUARD_S - target;
 *     one a few ms below the quantile adds nothing;
 *   - fewer than CLOCK_BRIDGE_DIPS_MIN dips: the window's average less its
 *     lowest fill;
 *   - the peak-hold: up at once, held for CLOCK_BRIDGE_SWING_HOLD_S after
 *     a rise, then down by at most CLOCK_BRIDGE_SWING_FALL s per s of
 *     window, toward the measured depth with a CLOCK_BRIDGE_SWING_DECAY_S
 *     time constant when that is slower, its fall rate reported;
 *   - a ceiling (clock_depth_set_max) holds D and counts the episodes;
 *   - windows that are not steady, that were trimmed, or whose depth is
 *     negative are not measured;
 *   - at most max_s; clock_depth_at_least raises D, never lowers it;
 *     clock_depth_reset forgets D and the dips. */
#include "depth.h"
#include "bridge.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>

#define TARGET_S 0.02
#define EPS 1e-12

static int failures;

#define CHECK(cond, ...) do { if (!(cond)) { failures++; \
  printf ("FAIL: "); printf (__VA_ARGS__); printf ("\n"); } } while (0)

/* xorshift64*: the same sequence on every host and libc */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static unsigned
rng_below (unsigned n)
{
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return (unsigned) (((rng_state * 0x2545F4914F6CDD1Dull) >> 32) % n);
}

static void
init (ClockDepth * d)
{
  clock_depth_init (d, TARGET_S, CLOCK_BRIDGE_MAX_DEPTH_S);
  clock_depth_new_window (d);
}

/* one complete, steady window (the average fill is not used once
 * CLOCK_BRIDGE_DIPS_MIN dips are known) */
static void
window (ClockDepth * d)
{
  clock_depth_window (d, CLOCK_BRIDGE_SWING_WINDOW_S, 0.05, 1);
}

/* CLOCK_BRIDGE_DIPS dips: all at `usual` but the last at `rare` */
static void
dips_with_one (ClockDepth * d, double usual, double rare)
{
  for (unsigned i = 0; i + 1 < CLOCK_BRIDGE_DIPS; i++)
    clock_depth_dip (d, usual);
  clock_depth_dip (d, rare);
}

static void
regular (void)
{
  ClockDepth d;
  double dips[CLOCK_BRIDGE_DIPS], q;
  unsigned k = (unsigned) lround (CLOCK_BRIDGE_DIP_QUANTILE *
      (CLOCK_BRIDGE_DIPS - 1));

  init (&d);
  for (unsigned i = 0; i < CLOCK_BRIDGE_DIPS; i++)
    dips[i] = 0.010 + 1e-5 * i;
  q = dips[k];
  /* shuffled: the order they came in does not matter */
  for (unsigned i = CLOCK_BRIDGE_DIPS - 1; i > 0; i--) {
    unsigned j = rng_below (i + 1);
    double x = dips[i];
    dips[i] = dips[j];
    dips[j] = x;
  }
  for (unsigned i = 0; i < CLOCK_BRIDGE_DIPS; i++)
    clock_depth_dip (&d, dips[i]);
  clock_depth_window (&d, 0.5 * CLOCK_BRIDGE_SWING_WINDOW_S, 0.05, 1);
  CHECK (!clock_depth_known (&d), "regular: known before the window ends");
  clock_depth_window (&d, 0.5 * CLOCK_BRIDGE_SWING_WINDOW_S, 0.05, 1);
  printf ("regular dips 10.00..12.55 ms: D %.3f ms (the %.0f %% quantile "
      "%.3f ms)\n", clock_depth_s (&d) * 1e3, CLOCK_BRIDGE_DIP_QUANTILE * 100,
      q * 1e3);
  CHECK (clock_depth_known (&d) && fabs (clock_depth_s (&d) - q) < EPS,
      "regular: D %.6f ms, not the quantile %.6f ms", clock_depth_s (&d) * 1e3,
      q * 1e3);
  /* more of the same: D stays */
  for (unsigned i = 0; i < CLOCK_BRIDGE_DIPS; i++)
    clock_depth_dip (&d, dips[i]);
  window (&d);
  CHECK (fabs (clock_depth_s (&d) - q) < EPS, "regular: D moved to %.6f ms",
      clock_depth_s (&d) * 1e3);
}

static void
rare_deep_dip (void)
{
  ClockDepth d;
  double want = 0.010 + CLOCK_BRIDGE_DIP_SPREAD * (0.040 - 0.010) +
      CLOCK_BRIDGE_DIP_GUARD_S - TARGET_S;

  init (&d);
  dips_with_one (&d, 0.010, 0.040);
  window (&d);
  printf ("255 dips of 10 ms and one of 40 ms: D %.3f ms (quantile 10 ms)\n",
      clock_depth_s (&d) * 1e3);
  CHECK (fabs (clock_depth_s (&d) - want) < EPS,
      "rare deep dip: D %.6f ms, want %.6f ms", clock_depth_s (&d) * 1e3,
      want * 1e3);

  /* 6 ms below the quantile: 10 + 12 + 5 - 20 = 7 ms < 10 ms */
  init (&d);
  dips_with_one (&d, 0.010, 0.016);
  window (&d);
  printf ("255 dips of 10 ms and one of 16 ms: D %.3f ms\n",
      clock_depth_s (&d) * 1e3);
  CHECK (fabs (clock_depth_s (&d) - 0.010) < EPS,
      "shallow rare dip: D %.6f ms, want the quantile", clock_depth_s (&d) * 1e3);
}

static void
few_dips (void)
{
  ClockDepth d;

  init (&d);
  for (unsigned i = 0; i + 1 < CLOCK_BRIDGE_DIPS_MIN; i++)
    clock_depth_dip (&d, 0.100);        /* not used: too few */
  clock_depth_low (&d, 0.031);
  clock_depth_low (&d, 0.025);
  clock_depth_low (&d, 0.040);
  clock_depth_window (&d, CLOCK_BRIDGE_SWING_WINDOW_S, 0.035, 1);
  printf ("%u dips, lowest fill 25 ms, average 35 ms: D %.3f ms\n",
      CLOCK_BRIDGE_DIPS_MIN - 1, clock_depth_s (&d) * 1e3);
  CHECK (fabs (clock_depth_s (&d) - 0.010) < EPS,
      "few dips: D %.6f ms, want 10 ms", clock_depth_s (&d) * 1e3);
}

static void
peak_hold (void)
{
  ClockDepth d;
  double before, fastest = 0.0;
  unsigned n = 0, held = 0, within = 0;

  init (&d);
  dips_with_one (&d, 0.060, 0.060);
  window (&d);
  CHECK (fabs (clock_depth_s (&d) - 0.060) < EPS, "peak-hold: start %.6f ms",
      clock_depth_s (&d) * 1e3);
  /* the pattern becomes shallow: held for CLOCK_BRIDGE_SWING_HOLD_S, then
   * down by at most SWING_FALL per s toward it */
  dips_with_one (&d, 0.010, 0.010);
  for (; n < 200; n++) {
    before = clock_depth_s (&d);
    window (&d);
    if (clock_depth_s (&d) == before)
      held++;
    CHECK (fabs (clock_depth_fall_rate (&d) * CLOCK_BRIDGE_SWING_WINDOW_S -
            (before - clock_depth_s (&d))) < EPS,
        "peak-hold: fall rate %.6f ms/s for a fall of %.6f ms",
        clock_depth_fall_rate (&d) * 1e3, (before - clock_depth_s (&d)) * 1e3);
    if (before - clock_depth_s (&d) > fastest)
      fastest = before - clock_depth_s (&d);
    if (within == 0 && clock_depth_s (&d) - 0.010 < 0.001)
      within = n + 1;
    CHECK (clock_depth_s (&d) >= 0.010 - EPS, "peak-hold: below the depth");
  }
  printf ("from 60 ms toward 10 ms: held %u s, within 1 ms after %u s, "
      "%.4f ms after %u s, at most %.4f ms per s\n", held, within,
      clock_depth_s (&d) * 1e3, n, fastest * 1e3);
  CHECK (held == (unsigned) CLOCK_BRIDGE_SWING_HOLD_S - 1, "peak-hold: "
      "held %u windows", held);
  CHECK (fastest <= CLOCK_BRIDGE_SWING_FALL * CLOCK_BRIDGE_SWING_WINDOW_S
      + EPS, "peak-hold: fell %.6f ms in a window", fastest * 1e3);
  /* 30 s held, 80 s at the fastest fall (0.5 ms per s from 50 ms above to
   * 10 ms = SWING_FALL x DECAY_S above), then 20 s per factor e: within
   * 1 ms of the windows' depth 30 + 80 + 20 ln 10 = 156 s on */
  CHECK (within > 0 && within <= 157, "peak-hold: within 1 ms after %u s",
      within);
  CHECK (clock_depth_s (&d) - 0.010 < 2e-4, "peak-hold: %.6f ms after %u s",
      clock_depth_s (&d) * 1e3, n);

  /* a rise starts the hold again */
  dips_with_one (&d, 0.030, 0.030);
  window (&d);
  dips_with_one (&d, 0.010, 0.010);
  for (n = 0; n + 1 < CLOCK_BRIDGE_SWING_HOLD_S; n++)
    window (&d);
  CHECK (fabs (clock_depth_s (&d) - 0.030) < EPS && clock_depth_fall_rate (&d)
      == 0.0, "peak-hold: fell within the hold after a rise (%.6f ms)",
      clock_depth_s (&d) * 1e3);
  window (&d);
  CHECK (clock_depth_s (&d) < 0.030, "peak-hold: held past the hold");

  /* close to the measured depth: the time constant is slower */
  init (&d);
  dips_with_one (&d, 0.0103, 0.0103);
  window (&d);
  dips_with_one (&d, 0.010, 0.010);
  for (n = 0; n < CLOCK_BRIDGE_SWING_HOLD_S; n++)
    window (&d);
  printf ("from 10.3 ms toward 10 ms: %.5f ms after the hold and 1 s\n",
      clock_depth_s (&d) * 1e3);
  CHECK (fabs (clock_depth_s (&d) - (0.0103 - 0.0003 *
              CLOCK_BRIDGE_SWING_WINDOW_S / CLOCK_BRIDGE_SWING_DECAY_S)) < EPS,
      "peak-hold decay: %.6f ms", clock_depth_s (&d) * 1e3);

  /* deeper: up at once */
  dips_with_one (&d, 0.030, 0.030);
  window (&d);
  CHECK (fabs (clock_depth_s (&d) - 0.030) < EPS, "peak-hold: rose to "
      "%.6f ms, want 30 ms", clock_depth_s (&d) * 1e3);
}

/* a ceiling set below the input's depth: D held there, each episode of
 * asking above it counted once */
static void
ceiling (void)
{
  ClockDepth d;

  init (&d);
  clock_depth_set_max (&d, 0.100);
  dips_with_one (&d, 0.200, 0.200);
  window (&d);
  window (&d);
  CHECK (fabs (clock_depth_s (&d) - 0.100) < EPS && clock_depth_at_max (&d)
      && clock_depth_limited (&d) == 1, "ceiling: D %.6f ms, %lu episodes",
      clock_depth_s (&d) * 1e3, clock_depth_limited (&d));
  dips_with_one (&d, 0.050, 0.050);
  window (&d);
  dips_with_one (&d, 0.200, 0.200);
  window (&d);
  clock_depth_at_least (&d, 0.300);
  CHECK (clock_depth_limited (&d) == 2, "ceiling: %lu episodes, want 2",
      clock_depth_limited (&d));
  clock_depth_set_max (&d, 0.080);
  CHECK (fabs (clock_depth_s (&d) - 0.080) < EPS, "ceiling lowered: D "
      "%.6f ms", clock_depth_s (&d) * 1e3);
  printf ("ceiling 100 ms: D held at it, 2 episodes counted\n");
}

static void
skipped (void)
{
  ClockDepth d;

  init (&d);
  dips_with_one (&d, 0.010, 0.010);
  window (&d);
  dips_with_one (&d, 0.030, 0.030);
  /* not steady: not measured */
  clock_depth_window (&d, CLOCK_BRIDGE_SWING_WINDOW_S, 0.05, 0);
  CHECK (fabs (clock_depth_s (&d) - 0.010) < EPS,
      "not steady: D %.6f ms", clock_depth_s (&d) * 1e3);
  /* trimmed: not measured; the next window is */
  clock_depth_skip_window (&d);
  window (&d);
  CHECK (fabs (clock_depth_s (&d) - 0.010) < EPS,
      "trimmed: D %.6f ms", clock_depth_s (&d) * 1e3);
  window (&d);
  CHECK (fabs (clock_depth_s (&d) - 0.030) < EPS,
      "after a trimmed window: D %.6f ms", clock_depth_s (&d) * 1e3);
  /* a new window restarts the time: half a window is not complete */
  clock_depth_window (&d, 0.5 * CLOCK_BRIDGE_SWING_WINDOW_S, 0.05, 1);
  clock_depth_new_window (&d);
  dips_with_one (&d, 0.040, 0.040);
  clock_depth_window (&d, 0.5 * CLOCK_BRIDGE_SWING_WINDOW_S, 0.05, 1);
  CHECK (fabs (clock_depth_s (&d) - 0.030) < EPS,
      "new window: measured early (D %.6f ms)", clock_depth_s (&d) * 1e3);
  /* a negative depth (the fill never below the average) is not one */
  init (&d);
  clock_depth_low (&d, 0.040);
  clock_depth_window (&d, CLOCK_BRIDGE_SWING_WINDOW_S, 0.035, 1);
  CHECK (!clock_depth_known (&d), "negative depth measured");
  printf ("windows not steady, trimmed, cut short or negative: not "
      "measured\n");
}

static void
bounds (void)
{
  ClockDepth d;

  init (&d);
  dips_with_one (&d, 0.8, 0.8);
  window (&d);
  CHECK (fabs (clock_depth_s (&d) - CLOCK_BRIDGE_MAX_DEPTH_S) < EPS,
      "max: D %.6f s", clock_depth_s (&d));

  init (&d);
  clock_depth_at_least (&d, 0.7);
  CHECK (clock_depth_known (&d)
      && fabs (clock_depth_s (&d) - CLOCK_BRIDGE_MAX_DEPTH_S) < EPS,
      "at least 0.7 s: D %.6f s", clock_depth_s (&d));

  init (&d);
  CHECK (!clock_depth_known (&d), "known at the start");
  clock_depth_at_least (&d, 0.004);
  CHECK (clock_depth_known (&d) && fabs (clock_depth_s (&d) - 0.004) < EPS,
      "at least 4 ms from nothing: D %.6f ms", clock_depth_s (&d) * 1e3);
  dips_with_one (&d, 0.030, 0.030);
  window (&d);
  clock_depth_at_least (&d, 0.020);
  CHECK (fabs (clock_depth_s (&d) - 0.030) < EPS,
      "at least 20 ms lowered D to %.6f ms", clock_depth_s (&d) * 1e3);
  clock_depth_at_least (&d, 0.045);
  CHECK (fabs (clock_depth_s (&d) - 0.045) < EPS,
      "at least 45 ms: D %.6f ms", clock_depth_s (&d) * 1e3);

  /* a new stream: D and the dips are learnt again */
  clock_depth_reset (&d);
  CHECK (!clock_depth_known (&d), "known after a reset");
  for (unsigned i = 0; i + 1 < CLOCK_BRIDGE_DIPS_MIN; i++)
    clock_depth_dip (&d, 0.100);
  clock_depth_new_window (&d);
  clock_depth_low (&d, 0.030);
  clock_depth_window (&d, CLOCK_BRIDGE_SWING_WINDOW_S, 0.035, 1);
  CHECK (fabs (clock_depth_s (&d) - 0.005) < EPS,
      "after a reset: D %.6f ms, want 5 ms (the old dips forgotten)",
      clock_depth_s (&d) * 1e3);
  printf ("at most %.1f s; at least raises, never lowers; a reset forgets\n",
      CLOCK_BRIDGE_MAX_DEPTH_S);
}

int
main (void)
{
  regular ();
  rare_deep_dip ();
  few_dips ();
  peak_hold ();
  ceiling ();
  skipped ();
  bounds ();
  printf ("%s\n", failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
